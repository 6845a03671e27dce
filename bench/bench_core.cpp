// Core benchmarks (issue: reference core). Run:
//   build/bench/bench_core --benchmark_min_time=0.2
// Trees are beam-shaped: a 64-token prompt, then 15 new nodes per step hung
// under the previous step's nodes, so depth grows as n / 15.
#include <benchmark/benchmark.h>

#include <random>

#include "core/decode/batch_beam_search.h"
#include "core/decode/trie_beam_search.h"
#include "core/kv/kv_cache.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/synthetic_model.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"

using namespace triescope;

namespace {
constexpr int32_t kBeams = 15;

struct BeamTree {
  TokenTree tree;
  int32_t num_slots = 0;
  std::vector<int32_t> prev, last;  // the last two steps' nodes
};

BeamTree beam_tree(int32_t n) {
  BeamTree t;
  std::mt19937 rng(42);
  std::vector<int32_t> prompt(64);
  for (auto& x : prompt) x = static_cast<int32_t>(rng() % 1000);
  for (int32_t id : t.tree.add_chain(kNoNode, prompt)) t.tree.node(id).slot = t.num_slots++;
  std::vector<int32_t> frontier = {t.tree.size() - 1};
  while (t.tree.size() < n) {
    std::vector<int32_t> next;
    for (int32_t i = 0; i < kBeams; ++i) {
      const int32_t parent = frontier[rng() % frontier.size()];
      const int32_t id = t.tree.add_child(parent, static_cast<int32_t>(rng() % 1000), 0.0);
      t.tree.node(id).slot = t.num_slots++;
      next.push_back(id);
    }
    t.prev = frontier;
    frontier = next;
  }
  t.last = frontier;
  return t;
}

// Alg. 2 line 7 as a full rebuild: every row of the n x n mask, by ancestor walks.
void BM_MaskFullRebuildAllRows(benchmark::State& st) {
  const BeamTree t = beam_tree(static_cast<int32_t>(st.range(0)));
  const auto all = t.tree.order_insertion();
  for (auto _ : st) benchmark::DoNotOptimize(ancestor_mask_build(t.tree, all, t.num_slots).words.data());
  st.counters["nodes"] = t.tree.size();
}

// One step's b new rows, built from scratch by walking each ancestor chain.
void BM_MaskStepAncestorWalk(benchmark::State& st) {
  const BeamTree t = beam_tree(static_cast<int32_t>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(ancestor_mask_build(t.tree, t.last, t.num_slots).words.data());
  st.counters["depth"] = t.tree.node(t.last.front()).depth;
}

// One step's b new rows, incrementally: parent's row + own bit (O(b x row words)).
void BM_MaskStepIncremental(benchmark::State& st) {
  const BeamTree t = beam_tree(static_cast<int32_t>(st.range(0)));
  IncrementalAncestorMask inc;
  inc.reset(t.num_slots);
  inc.extend(t.tree, t.prev, t.num_slots);  // the parents' rows, as the decoder holds them
  for (auto _ : st) {
    inc.retain(t.prev);
    benchmark::DoNotOptimize(inc.extend(t.tree, t.last, t.num_slots).words.data());
  }
  st.counters["row_words"] = BitMask::words_for(t.num_slots);
}

// GC: plan (keep ancestors of the 15 live leaves) + one gather over a cache of
// 256 bytes per slot, on a fresh copy of the tree each iteration.
void BM_GcCompaction(benchmark::State& st) {
  const BeamTree t = beam_tree(static_cast<int32_t>(st.range(0)));
  std::vector<float> cache(static_cast<size_t>(t.num_slots) * 64, 1.0f);
  int64_t kept = 0;
  for (auto _ : st) {
    st.PauseTiming();
    TokenTree tree = t.tree;
    std::vector<float> c = cache;
    st.ResumeTiming();
    const CompactionPlan plan = kv_collect_garbage(tree, t.last, t.num_slots);
    compaction_apply(plan, c, 64);
    kept = plan.new_num_slots();
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["kept_slots"] = static_cast<double>(kept);
}

// A whole decode: 32 steps after a 256-token prompt on a 2048-token synthetic
// vocabulary; reported per step. Trie vs batch in the same binary.
template <bool kTrie>
void BM_DecodeStep(benchmark::State& st) {
  SyntheticConfig mc;
  mc.vocab_size = 2048;
  mc.seed = 9;
  SyntheticModel model(mc);
  BeamConfig cfg;
  cfg.num_beams = static_cast<int32_t>(st.range(0));
  cfg.max_new_tokens = 32;
  cfg.gc_interval = 8;
  std::vector<int32_t> prompt(256);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37) % 2000);
  int64_t steps = 0;
  for (auto _ : st) {
    const DecodeResult r = kTrie ? trie_beam_search(model, prompt, cfg) : batch_beam_search(model, prompt, cfg);
    steps += r.metrics.steps;
  }
  st.SetItemsProcessed(steps);  // items/s = steps/s
}

// A beam step's host selection at b = 15 over a 32,000-token vocabulary: the
// log-softmax of the 15 rows, then the top 30 (beam, token) pairs, on
// range(0) threads (wall time).
void BM_BeamSelect(benchmark::State& st) {
  const int32_t rows = 15, vocab = 32000, threads = static_cast<int32_t>(st.range(0));
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 4.0f);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (float& x : logits) x = n(rng);
  std::vector<const float*> ptrs;
  for (int32_t r = 0; r < rows; ++r) ptrs.push_back(logits.data() + static_cast<size_t>(r) * vocab);
  std::vector<double> lp(logits.size()), beam(static_cast<size_t>(rows), -1.0);
  for (auto _ : st) {
    log_softmax_rows(ptrs, vocab, lp.data(), threads);
    benchmark::DoNotOptimize(topk_candidates(lp.data(), rows, vocab, beam.data(), 2 * rows, threads));
  }
}
}  // namespace

BENCHMARK(BM_BeamSelect)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskFullRebuildAllRows)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskStepAncestorWalk)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskStepIncremental)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GcCompaction)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_DecodeStep, true)->Name("BM_DecodeStep/trie")->Arg(3)->Arg(9)->Arg(15)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_DecodeStep, false)->Name("BM_DecodeStep/batch")->Arg(3)->Arg(9)->Arg(15)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
