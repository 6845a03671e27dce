// greedy: argmax decoding, one token per forward pass (the reference
// lookahead decoding must reproduce token for token).
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"

namespace triescope {
namespace {

struct Config final : AlgorithmConfig {
  LookaheadConfig seq;
};

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const LookaheadConfig& c = s.config_as<Config>().seq;
  os << "algorithm: greedy, max_new_tokens " << c.max_new_tokens << ", prompt " << s.prompt.size() << " tokens\n";
  const LookaheadResult r = greedy_decode(*s.model, s.prompt, c.max_new_tokens, c.eos_token, trace, s.options);
  os << "output: " << tokens_to_text(*s.model, r.tokens) << "\n";
  return {{sequence_output(r.tokens)}, metrics_json(r.metrics.to_json()), nullptr};
}

AlgorithmSpec spec() {
  AlgorithmSpec a;
  a.name = "greedy";
  a.description = "greedy (argmax) decoding, one token per forward pass";
  a.sections = {"greedy"};
  a.scored = false;
  a.parse = [](JsonObjectReader& r, const Sample& s) {
    auto c = std::make_shared<Config>();
    auto g = r.object("greedy");
    parse_sequence_limits(g, s, c->seq);
    g.finish();
    return c;
  };
  a.run = run;
  return a;
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(greedy_spec, spec());
}  // namespace triescope
