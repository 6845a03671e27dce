// STATIC vs its baselines on the CPU (paper Sec. 5, Table 1, Figures 2-3),
// scaled to this machine: batch B = 2, beam M = 70, L = 8, d = 2, random
// constraint sets (uniform SIDs, as the paper's scaling runs).
//
// One benchmark iteration = one full decode's worth of steps t = 0 .. L-1,
// each over B x M beams: log-softmax of [B*M x |V|] logits, the constraint
// mask (Alg. 1 phase 2), per-batch top-M selection, and the next-state update
// of the chosen beams. BM_unconstrained does the same without the mask and the
// state update; overhead = constrained - unconstrained, both from one run.
// Counters: step_us (wall time per decoding step), step_cpu_us (thread CPU
// time per step), constraint_cpu_us (thread CPU time per step inside the
// mask and the next-state update: the constraint's own cost).
// step/static_step_*: the whole step of core/constraint/static_step.h
// instead (no masked rows; the allowed tokens ranked); alias/*: the 4K
// aliasing guard (BM_alias).
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <string>

#include "core/common/error.h"
#include "core/constraint/baselines.h"
#include "core/constraint/static_constraint.h"
#include "core/constraint/static_step.h"
#include "core/constraint/vntk.h"
#ifdef TRIESCOPE_BENCH_TORCH
#include "bench/static_listing_torch.h"
#endif

using namespace triescope;

namespace {

constexpr int32_t kBatch = 2, kBeam = 70, kL = 8, kDense = 2;
constexpr int32_t kRows = kBatch * kBeam;

// Thread CPU time: the machine is shared, so wall time includes other jobs.
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * 4096;
}

struct Fixture {
  int64_t items = 0;
  int32_t V = 0;
  std::shared_ptr<const ConstraintSet> set;
  std::map<std::string, std::shared_ptr<ConstraintIndex>> index;
  std::map<std::string, std::vector<std::vector<int64_t>>> states;  // [impl][t][row]
  std::map<std::string, double> build_seconds;
  std::map<std::string, int64_t> rss_delta;
  std::vector<std::vector<int32_t>> prefixes;  // [row] a random id; beam row r at step t holds its first t tokens
  std::vector<float> logits;                   // [B*M x V]
};

Fixture& fixture(int64_t items, int32_t V) {
  static std::unique_ptr<Fixture> f;
  if (f && f->items == items && f->V == V) return *f;
  f.reset();  // free the previous size first
  f = std::make_unique<Fixture>();
  f->items = items;
  f->V = V;
  f->set = std::make_shared<const ConstraintSet>(constraint_set_random(items, kL, V, 20260224));
  std::mt19937_64 rng(99);
  for (int32_t r = 0; r < kRows; ++r) {
    const int32_t* it = f->set->item(static_cast<int64_t>(rng() % static_cast<uint64_t>(items)));
    f->prefixes.emplace_back(it, it + kL);
  }
  std::normal_distribution<float> g(0.0f, 3.0f);
  f->logits.resize(static_cast<size_t>(kRows) * static_cast<size_t>(V));
  for (auto& x : f->logits) x = g(rng);
  return *f;
}

// impl keys: vntk_stacked, vntk_compact, vntk_stacked_d0, pointer_trie, ppv_exact, ppv_approx, hash_bitmap
ConstraintIndex& index_for(Fixture& f, const std::string& key) {
  auto it = f.index.find(key);
  if (it != f.index.end()) return *it->second;
  const int64_t rss0 = rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<ConstraintIndex> ix;
  if (key == "vntk_stacked") ix = constraint_index_make("vntk", f.set, {kDense, CsrLayout::stacked});
  else if (key == "vntk_compact") ix = constraint_index_make("vntk", f.set, {kDense, CsrLayout::compact});
  else if (key == "vntk_stacked_d0") ix = constraint_index_make("vntk", f.set, {0, CsrLayout::stacked});
  else if (key == "vntk_compact_d0") ix = constraint_index_make("vntk", f.set, {0, CsrLayout::compact});
  else if (key == "vntk_stacked_d1") ix = constraint_index_make("vntk", f.set, {1, CsrLayout::stacked});
  else ix = constraint_index_make(key, f.set, {}, 50);
  f.build_seconds[key] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  f.rss_delta[key] = rss_bytes() - rss0;
  std::vector<std::vector<int64_t>> st(kL, std::vector<int64_t>(kRows));
  for (int32_t r = 0; r < kRows; ++r) {
    int64_t s = ix->root_state();
    for (int32_t t = 0; t < kL; ++t) {
      st[static_cast<size_t>(t)][static_cast<size_t>(r)] = s;
      s = ix->next_state(s, f.prefixes[static_cast<size_t>(r)][static_cast<size_t>(t)], t);
    }
  }
  f.states[key] = std::move(st);
  f.index[key] = ix;
  return *ix;
}

void log_softmax_rows(const float* in, float* out, int32_t rows, int32_t V) {
  for (int32_t r = 0; r < rows; ++r) {
    const float* x = in + static_cast<size_t>(r) * V;
    float* y = out + static_cast<size_t>(r) * V;
    float mx = x[0];
    for (int32_t v = 1; v < V; ++v) mx = std::max(mx, x[v]);
    float sum = 0.0f;
    for (int32_t v = 0; v < V; ++v) sum += std::exp(x[v] - mx);
    const float lse = mx + std::log(sum);
    for (int32_t v = 0; v < V; ++v) y[v] = x[v] - lse;
  }
}

// Top-M (row, token) pairs of one batch's [M x V] scores (a min-heap scan).
void top_m(const float* scores, int32_t V, std::vector<std::pair<float, int32_t>>& out) {
  std::priority_queue<std::pair<float, int32_t>, std::vector<std::pair<float, int32_t>>, std::greater<>> heap;
  const int32_t n = kBeam * V;
  for (int32_t i = 0; i < n; ++i) {
    const float s = scores[i];
    if (static_cast<int32_t>(heap.size()) < kBeam) heap.emplace(s, i);
    else if (s > heap.top().first) {
      heap.pop();
      heap.emplace(s, i);
    }
  }
  out.clear();
  while (!heap.empty()) {
    out.push_back(heap.top());
    heap.pop();
  }
}

// Wall and thread-CPU microseconds per decoding step, the counters every runner reports.
void set_step_counters(benchmark::State& state, double seconds, double cpu, int64_t steps) {
  state.counters["step_us"] = seconds / static_cast<double>(steps) * 1e6;
  state.counters["step_cpu_us"] = cpu / static_cast<double>(steps) * 1e6;
}

void run_steps(benchmark::State& state, const std::string& key) {
  const int64_t items = state.range(0);
  const int32_t V = static_cast<int32_t>(state.range(1));
  Fixture& f = fixture(items, V);
  ConstraintIndex* ix = nullptr;
  const bool floor = key == "floor";  // the projection alone: every row set to -inf
  if (!key.empty() && !floor) {
    try {
      ix = &index_for(f, key);
    } catch (const Error& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  std::vector<float> lp(f.logits.size());
  std::vector<std::pair<float, int32_t>> chosen;
  int64_t sink = 0;
  double seconds = 0.0, cpu = 0.0, cpu_constraint = 0.0;
  int64_t steps = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    for (int32_t t = 0; t < kL; ++t) {
      log_softmax_rows(f.logits.data(), lp.data(), kRows, V);  // Alg. 1 phase 1
      const std::vector<int64_t>* st = ix ? &f.states[key][static_cast<size_t>(t)] : nullptr;
      if (floor) {
        const double m0 = cpu_now();
        fill_neg_inf(lp.data(), static_cast<int64_t>(lp.size()));
        cpu_constraint += cpu_now() - m0;
        benchmark::DoNotOptimize(lp.data());
      }
      if (ix) {  // phase 2
        const double m0 = cpu_now();
        ix->mask(st->data(), kRows, t, lp.data(), nullptr, nullptr);
        cpu_constraint += cpu_now() - m0;
      }
      for (int32_t b = 0; b < kBatch; ++b) {  // phase 3
        top_m(lp.data() + static_cast<size_t>(b) * kBeam * V, V, chosen);
        if (ix) {  // phase 4: advance the chosen beams' states
          const double n0 = cpu_now();
          for (auto& [score, flat] : chosen) {
            if (std::isinf(score)) continue;
            const int32_t row = b * kBeam + flat / V;
            sink += ix->next_state((*st)[static_cast<size_t>(row)], flat % V, t);
          }
          cpu_constraint += cpu_now() - n0;
        } else {
          sink += chosen.front().second;
        }
      }
    }
    cpu += cpu_now() - c0;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    steps += kL;
    benchmark::DoNotOptimize(sink);
  }
  set_step_counters(state, seconds, cpu, steps);
  if (ix || floor) state.counters["constraint_cpu_us"] = cpu_constraint / static_cast<double>(steps) * 1e6;
  if (ix) {
    state.counters["index_MB"] = static_cast<double>(ix->memory_bytes()) / 1e6;
    state.counters["build_s"] = f.build_seconds[key];
    state.counters["rss_MB"] = static_cast<double>(f.rss_delta[key]) / 1e6;
  }
}

// The whole step as core/constraint/static_step.h does it, over the same
// set, states and logits: one pass per beam for the log-normaliser (dense
// bit rows applied in it), only the allowed tokens ranked, no masked rows.
// constraint_cpu_us here = its constraint phases (candidate lookup, next
// states of the winners), timed by the step (steady clock).
void run_static_step(benchmark::State& state, const std::string& key) {
  Fixture& f = fixture(state.range(0), static_cast<int32_t>(state.range(1)));
  VntkIndex* ix = nullptr;
  try {
    ix = &static_cast<VntkIndex&>(index_for(f, key));
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  StaticStep step(ix->matrix());
  StaticStepResult res;
  StaticStepTimes times;
  const std::vector<double> scores(static_cast<size_t>(kRows), 0.0);
  double seconds = 0.0, cpu = 0.0;
  int64_t steps = 0, sink = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    for (int32_t t = 0; t < kL; ++t) {
      step.run(f.logits.data(), f.states[key][static_cast<size_t>(t)].data(), scores.data(), kRows, kBatch, kBeam, t, res, &times);
      sink += res.next[0];
    }
    cpu += cpu_now() - c0;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    steps += kL;
    benchmark::DoNotOptimize(sink);
  }
  set_step_counters(state, seconds, cpu, steps);
  state.counters["constraint_cpu_us"] = times.constraint_s / static_cast<double>(steps) * 1e6;
  state.counters["index_MB"] = static_cast<double>(ix->memory_bytes()) / 1e6;
}
void BM_static_step_compact(benchmark::State& s) { run_static_step(s, "vntk_compact"); }
void BM_static_step_stacked(benchmark::State& s) { run_static_step(s, "vntk_stacked"); }

#ifdef TRIESCOPE_BENCH_TORCH
// The paper's Algorithm 2 listing in LibTorch ops (bench/static_listing_torch.h) on
// the CPU, one intra-op thread, over the same set, states and logits as the
// VNTK rows: one step = log-softmax, mask, top-M per batch, next states of the
// chosen (the same work as run_steps). The logits/states upload of each step is
// not timed (a model's output would already be a tensor).
// key "unconstrained": log-softmax and top-M only (the overhead's baseline).
void run_torch(benchmark::State& state, const std::string& key) {
  Fixture& f = fixture(state.range(0), static_cast<int32_t>(state.range(1)));
  std::unique_ptr<StaticListingTorch> ts;
  try {
    auto& ix = static_cast<VntkIndex&>(index_for(f, key == "unconstrained" ? "vntk_compact" : key));
    StaticListingTorch::set_cpu_threads(1);
    ts = std::make_unique<StaticListingTorch>(ix.matrix(), "cpu");
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const std::vector<double> scores(static_cast<size_t>(kRows), 0.0);
  double seconds = 0.0, cpu = 0.0;
  int64_t steps = 0;
  for (auto _ : state) {
    for (int32_t t = 0; t < kL; ++t) {
      ts->set_inputs(f.logits.data(), kRows, f.states[key == "unconstrained" ? "vntk_compact" : key][static_cast<size_t>(t)].data(), scores.data());
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_now();
      if (key == "unconstrained") ts->run_unconstrained(kBatch, kBeam);
      else ts->run(t, kBatch, kBeam);
      cpu += cpu_now() - c0;
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    steps += kL;
  }
  set_step_counters(state, seconds, cpu, steps);
  if (key != "unconstrained") state.counters["index_MB"] = static_cast<double>(ts->device_bytes()) / 1e6;
}
void BM_listing_torch_unconstrained(benchmark::State& s) { run_torch(s, "unconstrained"); }
void BM_listing_torch_stacked(benchmark::State& s) { run_torch(s, "vntk_stacked"); }
void BM_listing_torch_compact(benchmark::State& s) { run_torch(s, "vntk_compact"); }
void BM_listing_torch_stacked_d0(benchmark::State& s) { run_torch(s, "vntk_stacked_d0"); }
void BM_listing_torch_compact_d0(benchmark::State& s) { run_torch(s, "vntk_compact_d0"); }
#endif

// Hash bitmap: false-positive rate over the masks of this workload, measured
// against the exact CSR index (no false negatives is checked too).
void BM_hash_fpr(benchmark::State& state) {
  Fixture& f = fixture(state.range(0), static_cast<int32_t>(state.range(1)));
  ConstraintIndex& h = index_for(f, "hash_bitmap");
  ConstraintIndex& ex = index_for(f, "vntk_compact");
  std::vector<float> a(f.logits.size()), b(f.logits.size());
  int64_t fp = 0, neg = 0, fn = 0;
  for (auto _ : state) {
    fp = neg = fn = 0;
    for (int32_t t = 0; t < kL; ++t) {
      a = f.logits;
      b = f.logits;
      h.mask(f.states["hash_bitmap"][static_cast<size_t>(t)].data(), kRows, t, a.data(), nullptr, nullptr);
      ex.mask(f.states["vntk_compact"][static_cast<size_t>(t)].data(), kRows, t, b.data(), nullptr, nullptr);
      for (size_t i = 0; i < a.size(); ++i) {
        const bool hk = !std::isinf(a[i]), ek = !std::isinf(b[i]);
        neg += !ek;
        fp += hk && !ek;
        fn += ek && !hk;
      }
    }
  }
  state.counters["fpr_pct"] = 100.0 * static_cast<double>(fp) / static_cast<double>(std::max<int64_t>(1, neg));
  state.counters["false_neg"] = static_cast<double>(fn);
  state.counters["expected_fpr_pct"] = 100.0 * static_cast<HashBitmapIndex&>(h).expected_false_positive_rate();
}

// The 4K-aliasing trap, kept as a regression guard: the projection used to
// copy -inf from a fixed block into each [|V|] row (memcpy, i.e. rep movsb
// for 8 KB rows), and on AMD EPYC with glibc 2.36 that copy ran several
// times slower whenever the row sat 16 bytes past the block modulo 4096.
// "alias/copy_from_block/<offset>" replays that copy into 140 rows at
// `offset` bytes past the block modulo 4096 (the hazard itself);
// "alias/fill_neg_inf/<offset>" is today's fill (a string store from a register) at
// the same addresses, which must not care about the offset.
void BM_alias(benchmark::State& state, bool copy) {
  const int64_t offset = state.range(0), V = state.range(1);
  constexpr size_t kPage = 4096;
  const size_t row_bytes = static_cast<size_t>(V) * sizeof(float);
  std::vector<char> arena(row_bytes + static_cast<size_t>(kRows) * row_bytes + 4 * kPage);
  char* base = arena.data() + (kPage - reinterpret_cast<uintptr_t>(arena.data()) % kPage);
  float* block = reinterpret_cast<float*>(base);  // page-aligned, like a block the allocator placed so
  for (int64_t v = 0; v < V; ++v) block[v] = -std::numeric_limits<float>::infinity();
  char* rows = base + ((row_bytes + kPage - 1) / kPage + 1) * kPage + static_cast<size_t>(offset);
  double cpu = 0.0;
  int64_t steps = 0;
  for (auto _ : state) {
    const double c0 = cpu_now();
    for (int32_t r = 0; r < kRows; ++r) {
      float* row = reinterpret_cast<float*>(rows + static_cast<size_t>(r) * row_bytes);
      if (copy) std::memcpy(row, block, row_bytes);
      else fill_neg_inf(row, V);
    }
    benchmark::DoNotOptimize(rows);
    cpu += cpu_now() - c0;
    ++steps;
  }
  state.counters["step_cpu_us"] = cpu / static_cast<double>(steps) * 1e6;
}

// Index build: time and bytes per layout (App. B), from the same set.
void BM_build(benchmark::State& state, CsrLayout layout) {
  Fixture& f = fixture(state.range(0), static_cast<int32_t>(state.range(1)));
  TransitionMatrix::Memory mem;
  int64_t S = 0;
  double secs = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const auto tm = TransitionMatrix::build(*f.set, {kDense, layout});
      secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      mem = tm.memory();
      S = tm.num_states();
    } catch (const Error& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  state.counters["build_s"] = secs;
  state.counters["total_MB"] = static_cast<double>(mem.total()) / 1e6;
  state.counters["MB_per_1M_items"] = static_cast<double>(mem.total()) / static_cast<double>(f.items);
  state.counters["csr_B_per_node"] = static_cast<double>(mem.row_ptr + mem.cols + mem.next) / static_cast<double>(S);
  state.counters["dense_MB"] = static_cast<double>(mem.dense_mask + mem.dense_states + mem.dense_rank) / 1e6;
  state.counters["states_M"] = static_cast<double>(S) / 1e6;
}

void BM_unconstrained(benchmark::State& s) { run_steps(s, ""); }
void BM_floor(benchmark::State& s) { run_steps(s, "floor"); }
void BM_vntk_stacked(benchmark::State& s) { run_steps(s, "vntk_stacked"); }
void BM_vntk_compact(benchmark::State& s) { run_steps(s, "vntk_compact"); }
void BM_vntk_stacked_d0(benchmark::State& s) { run_steps(s, "vntk_stacked_d0"); }
void BM_vntk_compact_d0(benchmark::State& s) { run_steps(s, "vntk_compact_d0"); }
void BM_pointer_trie(benchmark::State& s) { run_steps(s, "pointer_trie"); }
void BM_ppv_exact(benchmark::State& s) { run_steps(s, "ppv_exact"); }
void BM_ppv_approx(benchmark::State& s) { run_steps(s, "ppv_approx"); }
void BM_hash_bitmap(benchmark::State& s) { run_steps(s, "hash_bitmap"); }

// Register one group per (|C|, |V|) so each set is built once. Which sizes run
// is chosen on the command line with --benchmark_filter (see docs).
void register_all() {
  const std::vector<std::pair<int64_t, int64_t>> configs = {
      {100000, 2048}, {1000000, 2048}, {10000000, 2048}, {20000000, 2048},
      {1000000, 256}, {1000000, 8192}, {1000000, 32768}};
  for (auto [c, v] : configs) {
    auto args = [&](benchmark::internal::Benchmark* b) { return b->Args({c, v})->Unit(benchmark::kMillisecond); };
    args(benchmark::RegisterBenchmark("build/stacked", BM_build, CsrLayout::stacked))->Iterations(1);
    args(benchmark::RegisterBenchmark("build/compact", BM_build, CsrLayout::compact))->Iterations(1);
    args(benchmark::RegisterBenchmark("step/unconstrained", BM_unconstrained))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/projection_floor", BM_floor))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/vntk_stacked_d2", BM_vntk_stacked))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/vntk_compact_d2", BM_vntk_compact))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/vntk_stacked_d0", BM_vntk_stacked_d0))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/vntk_compact_d0", BM_vntk_compact_d0))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/static_step_compact_d2", BM_static_step_compact))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/static_step_stacked_d2", BM_static_step_stacked))->MinTime(0.3);
#ifdef TRIESCOPE_BENCH_TORCH
    args(benchmark::RegisterBenchmark("step/listing_torch_unconstrained", BM_listing_torch_unconstrained))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/listing_torch_stacked_d2", BM_listing_torch_stacked))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/listing_torch_compact_d2", BM_listing_torch_compact))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/listing_torch_stacked_d0", BM_listing_torch_stacked_d0))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/listing_torch_compact_d0", BM_listing_torch_compact_d0))->MinTime(0.3);
#endif
    // the pointer trie needs ~100 bytes per node: skipped at 1e7+ on this 24 GB shared machine
    if (c <= 1000000) args(benchmark::RegisterBenchmark("step/pointer_trie", BM_pointer_trie))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/ppv_exact", BM_ppv_exact))->Iterations(1);
    args(benchmark::RegisterBenchmark("step/ppv_approx", BM_ppv_approx))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("step/hash_bitmap", BM_hash_bitmap))->MinTime(0.3);
    args(benchmark::RegisterBenchmark("hash_fpr", BM_hash_fpr))->Iterations(1);
  }
  for (const bool copy : {true, false})
    for (const int64_t offset : {0, 16, 64})
      benchmark::RegisterBenchmark(copy ? "alias/copy_from_block" : "alias/fill_neg_inf", BM_alias, copy)
          ->Args({offset, 2048})
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.2);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
