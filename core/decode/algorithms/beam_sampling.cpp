// beam_sampling (dynamic-width-speculative-beam-decoding.md, Section 2.1):
// W beams drawn from the joint beam distribution, on one token trie.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/sampling.h"

namespace triescope {
namespace {

struct Config final : BeamSection {
  SamplingConfig sampling;
};

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const Config& c = s.config_as<Config>();
  report_beam_settings(os, s, c.beam);
  report_sampling_settings(os, c.sampling);
  const SamplingDecodeResult r = beam_sampling(*s.model, s.prompt, c.beam, c.sampling, trace, s.options);
  report_sampling(os, s, c.beam, r);
  os << "KV cache: trie holds " << r.decode.metrics.peak_slots << " slots at its peak, batch layout " << r.decode.metrics.batch_peak_slots
     << "\n";
  json metrics = metrics_json(r.decode.metrics.to_json());
  metrics["sampling"] = r.sampling.to_json();
  return {r.decode.hypotheses, std::move(metrics), nullptr};
}

AlgorithmSpec spec() {
  AlgorithmSpec a;
  a.name = "beam_sampling";
  a.description = "beam sampling: W beams drawn from the joint beam distribution (DSBD paper, Section 2.1)";
  a.accepts.sampling = true;
  a.sections = {"beam", "sampling"};
  a.parse = [](JsonObjectReader& r, const Sample& s) {
    auto c = std::make_shared<Config>();
    parse_beam_section(r, s, *c);
    if (r.has("sampling")) c->sampling = SamplingConfig::from_json(r.object("sampling"));
    return c;
  };
  a.run = run;
  return a;
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(beam_sampling_spec, spec());
}  // namespace triescope
