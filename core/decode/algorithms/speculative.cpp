// speculative: speculative sampling with a draft chain of gamma tokens and
// the target verifying it in one pass (the DSBD paper's Section 2.2).
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/speculative.h"

namespace triescope {
namespace {

struct Config final : BeamSection {
  SpeculativeConfig spec;
};

void parse(JsonObjectReader& r, const Sample& s, Config& c) {
  parse_speculative_common(r, s, c, c.spec.sampling);
  auto sp = r.object("speculative");
  c.spec.gamma = static_cast<int32_t>(sp.get_int("gamma", 1, 64));
  sp.finish();
  c.spec.max_new_tokens = c.beam.max_new_tokens;
}

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const Config& c = s.config_as<Config>();
  report_sampling_settings(os, s, c.beam, c.spec.sampling);
  const SamplingDecodeResult r = speculative_decode(*s.model, *s.draft, s.prompt, c.spec, trace, s.options);
  report_sampling(os, s, c.beam, r);
  os << "iterations " << r.sampling.iterations << ", draft tokens accepted " << r.sampling.layers_accepted << " of "
     << r.sampling.layers_verified << " verified\n";
  return {r.decode.hypotheses, metrics_json(r.summary_metrics()), nullptr};
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(speculative_spec, AlgorithmSpec{
    .name = "speculative",
    .description = "speculative sampling: a draft chain verified by the target in one pass (DSBD paper, Section 2.2)",
    .accepts = {.draft_model = true, .sampling = true},
    .sections = {"beam", "sampling", "speculative"},
    .verify_kind = kVerifySpeculativeChain,
    .parse = config_parser(parse),
    .run = run,
});
}  // namespace triescope
