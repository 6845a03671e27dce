// lookahead (lookahead-trie-verification-ko.md): Jacobi-window lookahead
// decoding whose n-gram candidates are merged into one trie and verified in
// the same forward pass; reported beside independent verification and greedy.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"

namespace triescope {
namespace {

void parse(JsonObjectReader& l, const Sample& s, LookaheadConfig& q) {
  parse_sequence_limits(l, s, q);
  q.window = static_cast<int32_t>(l.get_int("window", 0, 4096, q.window));
  q.ngram = static_cast<int32_t>(l.get_int("ngram", 2, 64, q.ngram));
  q.max_candidates = static_cast<int32_t>(l.get_int("max_candidates", 0, 4096, q.max_candidates));
  q.pool_per_key = static_cast<int32_t>(l.get_int("pool_per_key", 1, 1 << 16, q.pool_per_key));
  q.trie_depth = static_cast<int32_t>(l.get_int("trie_depth", 1, 4096, q.trie_depth));
  q.trie_nodes = static_cast<int32_t>(l.get_int("trie_nodes", 1, 1 << 20, q.trie_nodes));
  q.seed = static_cast<uint64_t>(l.get_int("seed", 0, INT64_MAX, 1));
  q.verify = parse_named(l, "verify", LookaheadVerify::trie, kLookaheadVerifyNames);
}

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const LookaheadConfig& c = s.config_as<SectionConfig<LookaheadConfig>>().decoder;
  os << "algorithm: lookahead, max_new_tokens " << c.max_new_tokens << ", prompt " << s.prompt.size() << " tokens, W " << c.window
     << ", N " << c.ngram << ", G " << c.max_candidates << ", D " << c.trie_depth << ", B " << c.trie_nodes << "\n";
  const LookaheadResult r = lookahead_decode(*s.model, s.prompt, c, trace, s.options);
  LookaheadConfig ind = c;
  ind.verify = LookaheadVerify::independent;
  const LookaheadResult base = lookahead_decode(*s.model, s.prompt, ind, nullptr, s.options);
  const GreedyResult greedy = greedy_decode(*s.model, s.prompt, GreedyConfig{c.max_new_tokens, c.eos_token}, nullptr, s.options);
  const auto& m = r.metrics;
  os << "lookahead (" << lookahead_verify_name(c.verify) << " verification): " << m.generated << " tokens in " << m.steps << " steps, "
     << m.computed_decode << " tokens computed after the prefill (" << m.lookahead_tokens << " lookahead, " << m.verify_tokens
     << " verification)\n";
  os << "independent-candidate baseline: " << base.metrics.steps << " steps, " << base.metrics.computed_decode << " computed ("
     << base.metrics.verify_tokens << " verification)\n";
  os << "greedy: " << greedy.metrics.steps + 1 << " forward passes, " << greedy.metrics.computed_decode << " computed\n";
  os << "output identical to greedy decoding: " << (r.tokens == greedy.tokens ? "yes" : "NO") << "\n";
  return sequence_run(os, s, r.tokens, r.metrics.to_json());
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(lookahead_spec, AlgorithmSpec{
    .name = "lookahead",
    .description = "lookahead decoding with trie-merged n-gram verification (Algorithm 1)",
    .sections = {"lookahead"},
    .scored = false,
    .verify_kind = kVerifyLookahead,
    .seams = {"greedy_argmax"},  // its report's greedy reference
    .parse = section_parser("lookahead", parse),
    .run = run,
});
}  // namespace triescope
