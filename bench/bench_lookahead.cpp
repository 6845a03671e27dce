// Lookahead decoding: greedy vs independent-candidate verification vs
// trie-merged verification, on the repetitive synthetic workload of
// samples/lookahead_repetitive.json (W = 10, N = 5, G = 5, 256 tokens).
//   build/bench/bench_lookahead --benchmark_min_time=0.3
// Counters per decode: generated tokens, forward passes, computed tokens after
// the prefill (lookahead branch included), verification tokens.
#include <benchmark/benchmark.h>

#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"
#include "core/model/synthetic_model.h"

using namespace triescope;

namespace {
SyntheticModel workload_model() {
  SyntheticConfig c;
  c.vocab_size = 64;
  c.seed = 5;
  c.repetitiveness_q8 = 243;  // 0.95
  c.ngram = 1;
  return SyntheticModel(c);
}
const std::vector<int32_t> kPrompt = {7, 20, 33, 46, 59, 9, 22, 35, 48, 61, 11, 24, 37, 50, 0, 13, 26, 39, 52, 2, 15, 28, 41, 54};

void report(benchmark::State& st, const LookaheadResult& r) {
  st.counters["generated"] = r.metrics.generated;
  st.counters["forwards"] = r.metrics.steps + 1;
  st.counters["computed"] = static_cast<double>(r.metrics.computed_decode);
  st.counters["verify"] = static_cast<double>(r.metrics.verify_tokens);
  st.counters["tok_per_s"] = benchmark::Counter(static_cast<double>(r.metrics.generated) * static_cast<double>(st.iterations()),
                                                benchmark::Counter::kIsRate);
}

void BM_Greedy(benchmark::State& st) {
  SyntheticModel m = workload_model();
  LookaheadResult r;
  for (auto _ : st) r = greedy_decode(m, kPrompt, 256);
  report(st, r);
}

// range(0): 0 independent, 1 trie; range(1) = D, range(2) = B
void BM_Lookahead(benchmark::State& st) {
  SyntheticModel m = workload_model();
  LookaheadConfig c;
  c.max_new_tokens = 256;
  c.window = 10;
  c.ngram = 5;
  c.max_candidates = 5;
  c.verify = st.range(0) ? LookaheadVerify::trie : LookaheadVerify::independent;
  c.trie_depth = static_cast<int32_t>(st.range(1));
  c.trie_nodes = static_cast<int32_t>(st.range(2));
  LookaheadResult r;
  for (auto _ : st) r = lookahead_decode(m, kPrompt, c);
  report(st, r);
}
}  // namespace

BENCHMARK(BM_Greedy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Lookahead)->ArgNames({"trie", "D", "B"})->Args({0, 4, 1000})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Lookahead)
    ->ArgNames({"trie", "D", "B"})
    ->ArgsProduct({{1}, {1, 2, 3, 4}, {4, 8, 16, 64}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
