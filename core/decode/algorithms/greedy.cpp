// greedy: argmax decoding, one token per forward pass (the reference
// lookahead decoding must reproduce token for token).
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/greedy_decode.h"

namespace triescope {
namespace {

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const GreedyConfig& c = s.config_as<SectionConfig<GreedyConfig>>().decoder;
  os << "algorithm: greedy, max_new_tokens " << c.max_new_tokens << ", prompt " << s.prompt.size() << " tokens\n";
  const GreedyResult r = greedy_decode(*s.model, s.prompt, c, trace, s.options);
  return sequence_run(os, s, r.tokens, r.metrics.to_json());
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(greedy_spec, AlgorithmSpec{
    .name = "greedy",
    .description = "greedy (argmax) decoding, one token per forward pass",
    .sections = {"greedy"},
    .scored = false,
    .seams = {"greedy_argmax"},
    .parse = section_parser("greedy", parse_sequence_limits<GreedyConfig>),
    .run = run,
});
}  // namespace triescope
