// beam_sampling (dynamic-width-speculative-beam-decoding.md, Section 2.1):
// W beams drawn from the joint beam distribution, on one token trie.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/sampling.h"

namespace triescope {
namespace {

struct Config final : BeamSection {
  SamplingConfig sampling;
};

void parse(JsonObjectReader& r, const Sample& s, Config& c) { parse_sampling_sections(r, s, c, c.sampling); }

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const Config& c = s.config_as<Config>();
  report_sampling_settings(os, s, c.beam, c.sampling);
  const SamplingDecodeResult r = beam_sampling(*s.model, s.prompt, c.beam, c.sampling, trace, s.options);
  report_sampling(os, s, c.beam, r);
  os << "KV cache: trie holds " << r.decode.metrics.peak_slots << " slots at its peak, batch layout " << r.decode.metrics.batch_peak_slots
     << "\n";
  return {r.decode.hypotheses, metrics_json(r.summary_metrics()), nullptr};
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(beam_sampling_spec, AlgorithmSpec{
    .name = "beam_sampling",
    .description = "beam sampling: W beams drawn from the joint beam distribution (DSBD paper, Section 2.1)",
    .accepts = {.sampling = true},
    .sections = {"beam", "sampling"},
    .parse = config_parser(parse),
    .run = run,
});
}  // namespace triescope
