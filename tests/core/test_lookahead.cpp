#include <catch2/catch.hpp>

#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace_replay.h"

using namespace triescope;

namespace {
SyntheticModel repetitive_model(uint64_t seed, int32_t vocab, double rep, int32_t ngram) {
  SyntheticConfig c;
  c.vocab_size = vocab;
  c.seed = seed;
  c.repetitiveness_q8 = static_cast<int32_t>(rep * 256);
  c.ngram = ngram;
  c.eos_token = vocab - 1;
  c.eos_per_million = 2000;
  return SyntheticModel(c);
}
std::vector<int32_t> prompt_for(uint32_t seed, int32_t vocab, int32_t len) {
  std::vector<int32_t> p;
  for (int32_t i = 0; i < len; ++i) p.push_back(static_cast<int32_t>((seed * 7919u + static_cast<uint32_t>(i) * 13u) % static_cast<uint32_t>(vocab - 1)));
  return p;
}
}  // namespace

TEST_CASE("lookahead: output equals plain greedy decoding token for token", "[lookahead]") {
  const uint64_t seed = GENERATE(1u, 2u, 3u, 4u);
  const int32_t vocab = GENERATE(32, 64, 200);
  const double rep = GENERATE(0.0, 0.8, 0.95);
  const auto verify = GENERATE(LookaheadVerify::greedy_only, LookaheadVerify::independent, LookaheadVerify::trie);
  CAPTURE(seed, vocab, rep, static_cast<int>(verify));
  SyntheticModel m = repetitive_model(seed, vocab, rep, 1);
  const auto prompt = prompt_for(static_cast<uint32_t>(seed), vocab, 20);
  const LookaheadResult g = greedy_decode(m, prompt, 96, vocab - 1);
  LookaheadConfig c;
  c.max_new_tokens = 96;
  c.eos_token = vocab - 1;
  c.verify = verify;
  c.window = seed == 3 ? 0 : 6;
  c.trie_depth = 3;
  c.trie_nodes = 12;
  const LookaheadResult la = lookahead_decode(m, prompt, c);
  REQUIRE(la.tokens == g.tokens);
  CHECK(la.metrics.steps <= g.metrics.steps + 1);
}

TEST_CASE("lookahead: the trie verifies each unique prefix once, never more than independent candidates", "[lookahead]") {
  const uint64_t seed = GENERATE(5u, 6u, 7u);
  CAPTURE(seed);
  SyntheticModel m = repetitive_model(seed, 64, 0.95, 1);
  const auto prompt = prompt_for(static_cast<uint32_t>(seed), 64, 24);
  LookaheadConfig c;
  c.max_new_tokens = 128;
  c.eos_token = -1;
  c.trie_depth = 4;  // = N - 1: the trie sees whole candidates
  c.trie_nodes = 1000;
  c.verify = LookaheadVerify::independent;
  const LookaheadResult ind = lookahead_decode(m, prompt, c);
  c.verify = LookaheadVerify::trie;
  const LookaheadResult trie = lookahead_decode(m, prompt, c);
  REQUIRE(ind.tokens == trie.tokens);
  // Same candidates, same acceptances, fewer (or equal) verified tokens.
  CHECK(trie.metrics.steps == ind.metrics.steps);
  CHECK(trie.metrics.verify_tokens <= ind.metrics.verify_tokens);
  CHECK(trie.metrics.accepted_from_candidates == ind.metrics.accepted_from_candidates);
  CHECK(trie.metrics.accepted_from_candidates > 0);  // the repetitive workload does hit the pool
}

TEST_CASE("lookahead: budgets D and B bound every step's verification", "[lookahead]") {
  SyntheticModel m = repetitive_model(9, 64, 0.95, 1);
  LookaheadConfig c;
  c.max_new_tokens = 80;
  c.trie_depth = 2;
  c.trie_nodes = 3;
  MemoryTraceSink sink;
  const LookaheadResult r = lookahead_decode(m, prompt_for(9, 64, 16), c, &sink);
  TraceReplay replay(sink.records, "mem");
  int verify_steps = 0;
  for (const auto& rec : sink.records) {
    if (rec["kind"] != "step" || rec["phase"] != "verify") continue;
    ++verify_steps;
    const auto& nodes = rec["verify"]["candidate_nodes"];
    CHECK(nodes.size() <= 3u);
    const StepView v = replay.at(rec["step"].get<int32_t>());
    const int32_t root_depth = v.nodes.at(static_cast<size_t>(rec["forward"]["queries"][0].get<int32_t>())).depth;
    for (auto& n : nodes) CHECK(v.nodes.at(n.get<size_t>()).depth - root_depth <= 2);
  }
  CHECK(verify_steps == r.metrics.steps);
}
