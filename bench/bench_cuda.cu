// CUDA micro-benchmarks for the fast path, timed with CUDA events; each
// kernel's achieved bandwidth is printed next to the device-to-device
// cudaMemcpy bandwidth measured in the same run. Needs a GPU (exits 77 when
// none is usable). Run: build/bench/bench_cuda [--reps N]
//   1. ancestor mask for 4096 queries x 65536 slots: full build (chain walks)
//      and incremental build (one parallel row copy per new row);
//   2. KV compaction of a 1 GiB cache (Phi-3.5-mini-like slot, 384 KiB);
//   3. one trie beam step at b = 15 (K/V write, mask extend, synthetic
//      logits, log-softmax, top-2b) at the end of synthetic_long's decode;
//   4. the STATIC constraint step (issue 9): the fused step (CUDA graph
//      replay and plain launches) vs the paper's Algorithm 2 listing in LibTorch on the
//      device vs the CPU reference, at the paper's configuration over |C|,
//      over |V|, and the App. D branch-factor sweep (bench_static below).
// Flags: --reps N, --static (section 4 only), --paper (section 4's paper
// configuration only), --quick (section 4 at smoke sizes), --no-static
// (sections 1-3 only).
// Bytes are counted as the minimum a kernel must read plus write.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_event_timer.cuh"
#include "cuda/ancestor_mask.cuh"
#include "cuda/row_log_normaliser.cuh"
#include "cuda/topk_candidates.cuh"
#include "cuda/cuda_common.cuh"
#include "bench/static_bench_cpu.h"
#include "cuda/kv_compact.cuh"
#include "cuda/static/static_constraint_cuda.h"
#include "cuda/synthetic_logits.cuh"
#include "bench/legacy_selection.cuh"
#include "bench/topk_twin_check.h"

using namespace triescope;
using namespace triescope::cuda;

namespace {

int g_reps = 20;

template <typename F>
double time_ms(F&& fn) {  // median of g_reps runs after one warm-up
  return bench::cuda_median_ms(g_reps, fn);
}

double gbps(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

void report(const char* what, double bytes, double ms, double copy_gbps) {
  const double g = gbps(bytes, ms);
  std::printf("%-58s %10.4f ms  %10.1f MB  %8.1f GB/s  (%5.1f%% of D2D copy %.1f GB/s)\n", what, ms, bytes / 1e6, g,
              100.0 * g / copy_gbps, copy_gbps);
}

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& v) {
  DeviceBuffer<T> d(std::max<size_t>(v.size(), 1), "bench upload");
  TS_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "bench upload");
  return d;
}

void status_ok(DeviceBuffer<KernelStatus>& s, const char* what) { status_check(s.data(), nullptr, what); }

// ---- 4. STATIC constraint step ------------------------------------------------

struct StaticRow {
  double graph_ms = -1, launch_ms = -1, torch_ms = -1, cpu_ms = -1, free_ms = -1, old_ms = -1;
  int64_t device_bytes = 0, torch_bytes = 0;
};

// Fused step timings: from the root (one live beam per batch, HF style), L
// steps with advance on the device; median over reps of (events around the L
// steps) / L. only_step >= 0: that step alone, beams in p.states[only_step].
// The kernels before the radix select (bench/legacy_selection.cmake: 9ae4cdc's, from git history) run the same
// steps as CUDA graphs, rep by rep between the new kernel's reps; both end in
// the same beams (states, scores, picks), or the bench stops.
StaticRow time_fused(const bench::StaticProblem& p, int32_t groups, int32_t k, int32_t only_step, bool write_masked) {
  StaticRow r;
  const DeviceTransitionMatrix dm(p.tm);
  r.device_bytes = dm.bytes();
  const int32_t n = p.rows, M = n / groups;
  auto d_logits = upload(p.logits);
  cudaStream_t stream = nullptr;
  TS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "bench: stream");
  StaticStepCuda st(dm, n, groups, k, stream);
  StaticStepCuda old(dm, n, groups, k, stream, &bench::legacy::static_step);
  std::vector<int64_t> root(static_cast<size_t>(n), -1);
  std::vector<double> root_scores(static_cast<size_t>(n), -INFINITY);
  for (int32_t g = 0; g < groups; ++g) {
    root[static_cast<size_t>(g) * M] = 0;
    root_scores[static_cast<size_t>(g) * M] = 0.0;
  }
  const int32_t L = p.tm.length;
  const bool advance = only_step < 0;
  const int32_t steps = advance ? L : 1;
  const auto reset = [&](StaticStepCuda& s) {
    if (advance) s.reset(root, root_scores, 0);
    else s.reset(p.states[static_cast<size_t>(only_step)], std::vector<double>(static_cast<size_t>(n), 0.0), only_step);
  };
  bench::EventClock clock;
  const auto run_ms = [&](StaticStepCuda& s, bool graph) {
    reset(s);
    const double ms = clock.ms(
        [&] {
          for (int32_t i = 0; i < steps; ++i) {
            if (graph) s.graph_launch(d_logits.data(), write_masked, advance);
            else s.launch(d_logits.data(), write_masked, advance);
          }
        },
        stream);
    return ms / steps;
  };
  std::vector<double> graph_ms, launch_ms, old_ms;
  for (int rep = -1; rep < g_reps; ++rep) {  // rep -1: warm-up (and the graphs' capture)
    const double g = run_ms(st, true), o = run_ms(old, true), l = run_ms(st, false);
    if (rep < 0) continue;
    graph_ms.push_back(g);
    old_ms.push_back(o);
    launch_ms.push_back(l);
  }
  st.check("bench: static step");
  old.check("bench: legacy static step");
  const StaticStepHost x = st.download(false), y = old.download(false);
  if (x.top_flat != y.top_flat || x.top_next != y.top_next || x.top_count != y.top_count || x.top_score != y.top_score ||
      x.states != y.states) {
    std::fprintf(stderr, "bench_cuda: the STATIC step's picks differ between the new and the legacy kernels\n");
    std::exit(1);
  }
  r.graph_ms = bench::median_of(graph_ms);
  r.launch_ms = bench::median_of(launch_ms);
  r.old_ms = bench::median_of(old_ms);
  cudaStreamDestroy(stream);
  return r;
}

// The same step without the constraint: log-softmax of every row and the
// top k per group over the whole vocabulary, with the same selection kernels
// (topk_candidates), captured as one CUDA graph like the fused step (2
// launches, then 2 per group). What the fused step costs beyond it is the
// constraint's own overhead.
double time_unconstrained(const bench::StaticProblem& p, int32_t groups, int32_t k) {
  const int32_t n = p.rows, M = n / groups, V = p.tm.vocab_size;
  auto d_logits = upload(p.logits);
  DeviceBuffer<double> lp(static_cast<size_t>(n) * V, "logprobs"), lse_ws(static_cast<size_t>(log_softmax_workspace_size(n, V)), "lse ws");
  const auto entries = static_cast<size_t>(topk_candidates_workspace_size(M, V, k));
  DeviceBuffer<double> beam(static_cast<size_t>(n), "beam"), ws_s(entries * groups, "ws"), out_s(static_cast<size_t>(k) * groups, "out");
  DeviceBuffer<int64_t> ws_f(entries * groups, "ws"), out_f(static_cast<size_t>(k) * groups, "out");
  DeviceBuffer<int32_t> count(static_cast<size_t>(groups), "count");
  TS_CUDA_CHECK(cudaMemset(beam.data(), 0, beam.bytes()), "bench: beam scores");
  LogSoftmaxParams s;
  s.logits = d_logits.data();
  s.logits_rows = n;
  s.vocab = V;
  s.num_rows = n;
  s.out = lp.data();
  s.workspace = lse_ws.data();
  return bench::cuda_graph_median_ms(g_reps, [&](cudaStream_t stream) {
    log_softmax_rows(s, stream);
    for (int32_t g = 0; g < groups; ++g) {
      TopkCandidatesParams t;
      t.logprobs = lp.data() + static_cast<size_t>(g) * M * V;
      t.beam_scores = beam.data() + static_cast<size_t>(g) * M;
      t.num_rows = M;
      t.vocab = V;
      t.k = k;
      t.workspace_score = ws_s.data() + entries * g;
      t.workspace_flat = ws_f.data() + entries * g;
      t.out_score = out_s.data() + static_cast<size_t>(k) * g;
      t.out_flat = out_f.data() + static_cast<size_t>(k) * g;
      t.out_count = count.data() + g;
      topk_candidates(t, stream);
    }
  });
}

bool fits_on_device(const bench::StaticProblem& p, double factor) {
  size_t free_b = 0, total_b = 0;
  TS_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "bench: memory info");
  // the fused matrix, and the LibTorch copy (int64 index temporaries are small)
  return factor * static_cast<double>(p.tm.memory().total()) + 2.0 * p.logits.size() * 12.0 < 0.9 * static_cast<double>(free_b);
}

void static_header() {
  std::printf("%-10s %6s %3s %2s %-8s %10s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s %9s %9s\n", "|C|", "|V|", "L", "d", "layout",
              "graph_ms", "launch_ms", "old_ms", "free_ms", "torch_ms", "cpu_ms", "cons_us", "old/us", "torch/us", "cpu/us", "dev_MB", "MB/1M",
              "torch_MB");
}

void static_line(int64_t items, int32_t V, int32_t L, int32_t d, CsrLayout layout, const StaticRow& r) {
  const auto ratio = [&](double x) { return x > 0 && r.graph_ms > 0 ? x / r.graph_ms : -1.0; };
  const double cons_us = r.free_ms > 0 && r.graph_ms > 0 ? 1000.0 * (r.graph_ms - r.free_ms) : 0.0;
  std::printf("%-10lld %6d %3d %2d %-8s %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f %8.1f %8.1f %8.1f %8.1f %8.1f %9.2f %9.1f\n",
              static_cast<long long>(items), V, L, d, csr_layout_name(layout), r.graph_ms, r.launch_ms, r.old_ms, r.free_ms, r.torch_ms, r.cpu_ms,
              cons_us, ratio(r.old_ms), ratio(r.torch_ms), ratio(r.cpu_ms), r.device_bytes / 1e6,
              static_cast<double>(r.device_bytes) / static_cast<double>(items), r.torch_bytes / 1e6);
  std::fflush(stdout);
}

// One (set, d, layout) case: fused, LibTorch on CUDA, CPU reference.
void static_case(const ConstraintSet& set, int32_t d, CsrLayout layout, int32_t batch, int32_t beam, int32_t only_step, int cpu_reps,
                 bool write_masked) {
  const int32_t rows = batch * beam, k = beam;  // top-M per batch, as bench_constraint's CPU pipeline
  bench::StaticProblem p;
  try {
    p = bench::static_problem(set, d, layout, rows, 99);
  } catch (const Error& e) {
    std::printf("%-10lld %6d %3d %2d %-8s skipped: %s\n", static_cast<long long>(set.size()), set.vocab_size, set.length, d,
                csr_layout_name(layout), e.what());
    return;
  }
  if (!fits_on_device(p, 2.0)) {
    std::printf("%-10lld %6d %3d %2d %-8s skipped: %.1f MB matrix (x2 with the LibTorch copy) does not fit in free device memory\n",
                static_cast<long long>(set.size()), set.vocab_size, set.length, d, csr_layout_name(layout), p.tm.memory().total() / 1e6);
    return;
  }
  StaticRow r = time_fused(p, batch, k, only_step, write_masked);
  r.free_ms = time_unconstrained(p, batch, k);
  std::string why;
  r.torch_ms = bench::static_listing_torch_step_ms(p, "cuda", batch, k, g_reps, &why, &r.torch_bytes, only_step);
  r.cpu_ms = bench::static_cpu_step_ms(p, batch, k, cpu_reps, only_step);
  static_line(set.size(), set.vocab_size, set.length, p.tm.dense_levels, layout, r);
  if (r.torch_ms < 0) std::printf("  (LibTorch on CUDA not measured: %s)\n", why.c_str());
}

void bench_static(bool quick, bool paper_only) {
  std::printf("\nSTATIC constraint step: ms per decoding step (mean over the L steps from the root, median of %d reps); fused = "
              "%d kernels per step, graph = one cudaGraphLaunch per step; torch = the paper's Algorithm 2 listing in LibTorch ops on this "
              "device; cpu = core's reference (one thread); old = the k-round kernels this replaced (9ae4cdc's, from git history by bench/legacy_selection.cmake, graph replay, "
              "rep by rep between the new kernel's reps, picks asserted equal); free = the same step without the constraint (log-softmax + topk_candidates per "
              "group over the whole vocabulary: 2 launches, then 2 per group, one CUDA graph); cons_us = graph - free, the constraint's own cost. old/us, torch/us "
              "and cpu/us: ratios to the fused graph step. MB/1M = device bytes per 1M items.\n",
              g_reps, kStaticStepKernels);
  const int32_t batch = 2, beam = 70, L = 8;
  // (a) the paper's configuration over |C| (Sec. 5: batch 2, beam 70, |V| = 2048, L = 8, d = 2)
  std::printf("\n(a) paper configuration: batch %d, beam %d, |V| = 2048, L = %d, d = 2\n", batch, beam, L);
  static_header();
  const std::vector<int64_t> sizes = quick ? std::vector<int64_t>{100000} : std::vector<int64_t>{100000, 1000000, 10000000, 20000000, 100000000};
  for (int64_t items : sizes) {
    ConstraintSet set;
    try {
      set = bench::static_bench_set(items, L, 2048);
    } catch (const std::exception& e) {
      std::printf("%-10lld skipped: %s\n", static_cast<long long>(items), e.what());
      continue;
    }
    for (CsrLayout layout : {CsrLayout::stacked, CsrLayout::compact}) static_case(set, 2, layout, batch, beam, -1, quick ? 2 : 3, false);
  }
  if (paper_only) return;
  // (b) |V| sweep at |C| = 1e7 (the paper's Figure 3); d = 2 where the dense tables fit (App. B), else 1
  const int64_t v_items = quick ? 100000 : 10000000;
  std::printf("\n(b) |V| sweep: |C| = %lld, batch %d, beam %d, L = %d\n", static_cast<long long>(v_items), batch, beam, L);
  static_header();
  const std::vector<int32_t> vocabs = quick ? std::vector<int32_t>{256, 2048} : std::vector<int32_t>{256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  for (int32_t V : vocabs) {
    const ConstraintSet set = bench::static_bench_set(v_items, L, V);
    for (CsrLayout layout : {CsrLayout::stacked, CsrLayout::compact}) {
      const int32_t d = (layout == CsrLayout::stacked && static_cast<double>(V) * V * 4.125 > 2.5e9) ? 1 : 2;
      static_case(set, d, layout, batch, beam, -1, quick ? 2 : 3, false);
    }
  }
  // (c) App. D: max branch factor B = |V| in 2^1 .. 2^18, |C| = 1e6 uniform
  // SIDs, d = 0; the step at the root, whose slice is B_0 wide (the masking
  // kernel the paper times). Two lines per B: the full step (top-70 per
  // batch) and the mask-only output (masked log-probs written, k = 1).
  const int64_t d_items = quick ? 100000 : 1000000;
  std::printf("\n(c) App. D branch-factor sweep: |V| = B, |C| = %lld, d = 0, step 0 (slice width B_0), batch %d, beam %d\n",
              static_cast<long long>(d_items), batch, beam);
  static_header();
  const int max_log = quick ? 8 : 18;
  for (int lb = 1; lb <= max_log; lb += (quick ? 3 : 1)) {
    const int32_t V = 1 << lb;
    int32_t Ld = 2;  // the shortest ids that hold 4|C| distinct values, at least 2
    while (std::pow(static_cast<double>(V), Ld) < 4.0 * static_cast<double>(d_items)) ++Ld;
    const ConstraintSet set = bench::static_bench_set(d_items, Ld, V);
    static_case(set, 0, CsrLayout::compact, batch, beam, 0, quick ? 2 : 3, false);
    bench::StaticProblem p = bench::static_problem(set, 0, CsrLayout::compact, batch * beam, 99);
    if (!fits_on_device(p, 2.0)) continue;
    StaticRow r = time_fused(p, batch, 1, 0, true);  // mask only: the masked log-probs, k = 1
    std::string why;
    r.torch_ms = bench::static_listing_torch_step_ms(p, "cuda", batch, 1, g_reps, &why, &r.torch_bytes, 0);
    r.cpu_ms = bench::static_cpu_step_ms(p, batch, 1, quick ? 2 : 3, 0);
    std::printf("  mask-only (k = 1, masked log-probs written), B_0 = %d:\n", p.tm.max_branch[0]);
    static_line(set.size(), V, Ld, 0, CsrLayout::compact, r);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool run_static = true, only_static = false, quick = false, paper = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) g_reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--static") only_static = true;
    else if (a == "--quick") only_static = quick = true;
    else if (a == "--paper") only_static = paper = true;
    else if (a == "--no-static") run_static = false;
    else {
      std::fprintf(stderr, "bench_cuda: unknown argument %s (use --reps N, --static, --paper, --quick, --no-static)\n", a.c_str());
      return 2;
    }
  }
  std::string why;
  if (device_count(&why) == 0) {
    std::printf("bench_cuda: no usable CUDA device (%s)\n", why.c_str());
    return 77;
  }
  try {
    cudaDeviceProp prop{};
    TS_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0), "bench: properties");
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    std::printf("device: %s (sm_%d%d, %d SMs, L2 %d MiB), driver %d, runtime %d, median of %d reps\n", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount, prop.l2CacheSize >> 20, driver, runtime, g_reps);
    if (only_static) {
      bench_static(quick, paper);
      return 0;
    }
    DeviceBuffer<KernelStatus> status(1, "status");
    TS_CUDA_CHECK(cudaMemset(status.data(), 0, sizeof(KernelStatus)), "bench: status");

    // --- reference: device-to-device copy of 1 GiB (read + write counted) ---
    const size_t gib = size_t{1} << 30;
    double copy_gbps = 0;
    {
      DeviceBuffer<unsigned char> a(gib, "copy src"), b(gib, "copy dst");
      TS_CUDA_CHECK(cudaMemset(a.data(), 1, gib), "bench: fill");
      const double ms = time_ms([&] { TS_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), gib, cudaMemcpyDeviceToDevice), "bench: copy"); });
      copy_gbps = gbps(2.0 * gib, ms);
      std::printf("%-58s %10.4f ms  %10.1f MB  %8.1f GB/s\n", "cudaMemcpy D2D 1 GiB (read + write)", ms, 2.0 * gib / 1e6, copy_gbps);
    }

    std::mt19937_64 rng(42);
    // --- 1. ancestor mask, 4096 queries x 65536 slots ---
    {
      const int32_t num_nodes = 65536, num_slots = 65536, num_queries = 4096, prompt = 1024;
      std::vector<int32_t> parent(num_nodes), slot(num_nodes), queries(num_queries);
      // a beam-like trie: a prompt chain, then nodes under one of the last 64 nodes
      for (int32_t i = 0; i < num_nodes; ++i) {
        parent[i] = i == 0 ? -1 : (i < prompt ? i - 1 : i - 1 - static_cast<int32_t>(rng() % std::min<uint64_t>(64, i)));
        slot[i] = i;
      }
      for (int32_t q = 0; q < num_queries; ++q) queries[q] = num_nodes - num_queries + q;
      auto d_parent = upload(parent), d_slot = upload(slot), d_q = upload(queries);
      const int32_t words = num_slots / 64;
      DeviceBuffer<uint64_t> mask(static_cast<size_t>(num_queries) * words, "mask");
      AncestorMaskBuildParams p;
      p.parent = d_parent.data();
      p.slot = d_slot.data();
      p.num_nodes = num_nodes;
      p.queries = d_q.data();
      p.num_queries = num_queries;
      p.num_slots = num_slots;
      p.words_per_row = words;
      p.mask = mask.data();
      p.maybe_status = status.data();
      const double ms = time_ms([&] { ancestor_mask_build(p, nullptr); });
      status_ok(status, "bench: full mask build");
      report("mask full build 4096 x 65536 (rows written)", double(mask.bytes()), ms, copy_gbps);

      // incremental: 4096 new rows, each its parent's held row + own bit
      const int32_t held = 4096;
      DeviceBuffer<uint64_t> table(static_cast<size_t>(held + num_queries) * words, "table");
      TS_CUDA_CHECK(cudaMemset(table.data(), 0x11, table.bytes()), "bench: table");
      std::vector<int32_t> src(num_queries), bp(num_queries, -1), own(num_queries), dst(num_queries);
      for (int32_t i = 0; i < num_queries; ++i) {
        src[i] = static_cast<int32_t>(rng() % held);
        own[i] = static_cast<int32_t>(rng() % num_slots);
        dst[i] = held + i;
      }
      auto d_src = upload(src), d_bp = upload(bp), d_own = upload(own), d_dst = upload(dst);
      DeviceBuffer<uint64_t> out(static_cast<size_t>(num_queries) * words, "out");
      AncestorMaskExtendParams e;
      e.src_row = d_src.data();
      e.batch_parent = d_bp.data();
      e.slot = d_own.data();
      e.dst_row = d_dst.data();
      e.num_new = num_queries;
      e.table = table.data();
      e.table_rows = held + num_queries;
      e.table_words = words;
      e.num_slots = num_slots;
      e.maybe_out = out.data();
      e.out_words = words;
      e.maybe_status = status.data();
      const double ms2 = time_ms([&] { ancestor_mask_extend(e, nullptr); });
      status_ok(status, "bench: incremental mask");
      report("mask incremental 4096 x 65536 (parent read, row + out written)", 3.0 * double(out.bytes()), ms2, copy_gbps);
      e.maybe_out = nullptr;
      const double ms3 = time_ms([&] { ancestor_mask_extend(e, nullptr); });
      status_ok(status, "bench: incremental mask");
      report("mask incremental 4096 x 65536, table only (read + write)", 2.0 * double(out.bytes()), ms3, copy_gbps);
    }

    // --- 2. compaction of a 1 GiB cache ---
    {
      const int64_t row_bytes = int64_t{32} * 2 * 32 * 96 * 2;  // layers x (K,V) x kv_heads x head_dim x fp16
      const int32_t old_slots = static_cast<int32_t>(gib / row_bytes);
      DeviceBuffer<unsigned char> a(static_cast<size_t>(old_slots * row_bytes), "cache"),
          b(static_cast<size_t>(old_slots * row_bytes), "cache'");
      TS_CUDA_CHECK(cudaMemset(a.data(), 3, a.bytes()), "bench: fill");
      for (double keep : {1.0, 0.5}) {
        std::vector<int32_t> src;
        for (int32_t s = 0; s < old_slots; ++s)
          if (keep >= 1.0 || (rng() % 1000) < keep * 1000) src.push_back(s);  // GC keeps old order
        auto d_src = upload(src);
        KvCompactParams p;
        p.src = a.data();
        p.dst = b.data();
        p.plan_src = d_src.data();
        p.new_num_slots = static_cast<int32_t>(src.size());
        p.old_num_slots = old_slots;
        p.row_bytes = row_bytes;
        p.maybe_status = status.data();
        const double ms = time_ms([&] { kv_compact(p, nullptr); });
        status_ok(status, "bench: compaction");
        char label[128];
        std::snprintf(label, sizeof label, "kv compaction of %.2f GiB, keep %zu/%d slots (read + write)",
                      double(a.bytes()) / gib, src.size(), old_slots);
        report(label, 2.0 * double(src.size()) * double(row_bytes), ms, copy_gbps);
      }
    }

    // --- 3. one beam step at b = 15 ---
    for (int32_t vocab : {512, 32000}) {
      const int32_t b = 15, prompt = 64, generated = 256, k = 2 * b;
      const int32_t num_slots = prompt + b * generated;  // no GC: the worst case of synthetic_long
      const int32_t words = (num_slots + 63) / 64;
      const int32_t table_words = words + (words & 1);
      std::vector<int32_t> kv_tok(num_slots), kv_pos(num_slots);
      for (int32_t s = 0; s < num_slots; ++s) {
        kv_tok[s] = static_cast<int32_t>(rng() % vocab);
        kv_pos[s] = s < prompt ? s : prompt + (s - prompt) / b;
      }
      auto d_kv_tok = upload(kv_tok), d_kv_pos = upload(kv_pos);
      // parents' rows: each of the b held rows sees the prompt plus one slot per level
      std::vector<uint64_t> table(static_cast<size_t>(2 * b) * table_words, 0);
      for (int32_t r = 0; r < b; ++r) {
        for (int32_t s = 0; s < prompt; ++s) table[r * table_words + s / 64] |= uint64_t{1} << (s % 64);
        for (int32_t g = 0; g + 1 < generated; ++g) {
          const int32_t s = prompt + g * b + static_cast<int32_t>(rng() % b);
          table[r * table_words + s / 64] |= uint64_t{1} << (s % 64);
        }
      }
      auto d_table = upload(table);
      std::vector<int32_t> step(4 * b);  // tokens | positions | slots | src rows
      for (int32_t i = 0; i < b; ++i) {
        step[i] = static_cast<int32_t>(rng() % vocab);
        step[b + i] = prompt + generated - 1;
        step[2 * b + i] = prompt + (generated - 1) * b + i;
        step[3 * b + i] = i;
      }
      std::vector<int32_t> bp(b, -1), dst(b);
      for (int32_t i = 0; i < b; ++i) dst[i] = b + i;
      auto d_step = upload(step), d_bp = upload(bp), d_dst = upload(dst);
      DeviceBuffer<uint64_t> d_mask(static_cast<size_t>(b) * words, "step mask");
      DeviceBuffer<float> d_logits(static_cast<size_t>(b) * vocab, "logits");
      DeviceBuffer<double> d_lp(static_cast<size_t>(b) * vocab, "logprobs");
      std::vector<double> beam(b);
      for (auto& x : beam) x = -double(rng() % 1000) / 100.0;
      auto d_beam = upload(beam);
      const auto ws_entries = static_cast<size_t>(topk_candidates_workspace_size(b, vocab, k));
      DeviceBuffer<double> ws_s(ws_entries, "ws"), out_s(k, "out");
      DeviceBuffer<int64_t> ws_f(ws_entries, "ws"), out_f(k, "out");
      DeviceBuffer<double> ws_lse(static_cast<size_t>(log_softmax_workspace_size(b, vocab)), "lse ws");
      DeviceBuffer<float> ws_norm(static_cast<size_t>(row_log_normaliser_workspace_size(b, vocab)), "normaliser ws");
      DeviceBuffer<double> d_lse(static_cast<size_t>(b), "lse");
      DeviceBuffer<int32_t> count(1, "count");

      SyntheticKvWriteParams w;
      w.tokens = d_step.data();
      w.positions = d_step.data() + b;
      w.slots = d_step.data() + 2 * b;
      w.num_queries = b;
      w.kv_tokens = d_kv_tok.data();
      w.kv_positions = d_kv_pos.data();
      w.num_slots = num_slots;
      w.maybe_status = status.data();
      AncestorMaskExtendParams e;
      e.src_row = d_step.data() + 3 * b;
      e.batch_parent = d_bp.data();
      e.slot = d_step.data() + 2 * b;
      e.dst_row = d_dst.data();
      e.num_new = b;
      e.table = d_table.data();
      e.table_rows = 2 * b;
      e.table_words = table_words;
      e.num_slots = num_slots;
      e.maybe_out = d_mask.data();
      e.out_words = words;
      e.maybe_status = status.data();
      SyntheticLogitsParams l;
      l.cfg.vocab_size = vocab;
      l.cfg.seed = 2024;
      l.cfg.peakiness_q8 = 384;
      l.cfg.eos_token = vocab - 1;
      l.cfg.eos_per_million = 2000;
      l.kv_tokens = d_kv_tok.data();
      l.kv_positions = d_kv_pos.data();
      l.num_slots = num_slots;
      l.mask = d_mask.data();
      l.words_per_row = words;
      l.query_positions = d_step.data() + b;
      l.num_queries = b;
      l.maybe_out_logits = d_logits.data();
      l.maybe_status = status.data();
      LogSoftmaxParams s;
      s.logits = d_logits.data();
      s.logits_rows = b;
      s.vocab = vocab;
      s.num_rows = b;
      s.out = d_lp.data();
      s.workspace = ws_lse.data();
      s.maybe_status = status.data();
      // The decoders' path (cuda::DeviceSelector): each row's log-normaliser,
      // the reference's bit for bit, then the top 2b read from the logits.
      RowLogNormaliserParams n;
      n.logits = d_logits.data();
      n.num_rows = b;
      n.vocab = vocab;
      n.workspace = ws_norm.data();
      n.out_lse = d_lse.data();
      n.maybe_status = status.data();
      TopkCandidatesParams t;
      t.maybe_logits = d_logits.data();
      t.maybe_lse = d_lse.data();
      t.beam_scores = d_beam.data();
      t.num_rows = b;
      t.vocab = vocab;
      t.k = k;
      t.workspace_score = ws_s.data();
      t.workspace_flat = ws_f.data();
      t.out_score = out_s.data();
      t.out_flat = out_f.data();
      t.out_count = count.data();
      const auto step_on = [&](cudaStream_t st) {
        synthetic_kv_write(w, st);
        ancestor_mask_extend(e, st);
        synthetic_logits(l, st);
        row_log_normalisers(n, st);
        topk_candidates(t, st);
      };
      const auto whole_step = [&] { step_on(nullptr); };
      const double ms = time_ms(whole_step);
      status_ok(status, "bench: beam step");
      // The selection's outputs equal the CPU twin's on the same logits.
      std::vector<float> logits(static_cast<size_t>(b) * vocab);
      std::vector<double> got_s(static_cast<size_t>(k));
      std::vector<int64_t> got_f(static_cast<size_t>(k));
      TS_CUDA_CHECK(cudaMemcpy(logits.data(), d_logits.data(), logits.size() * sizeof(float), cudaMemcpyDeviceToHost), "bench: logits");
      TS_CUDA_CHECK(cudaMemcpy(got_s.data(), out_s.data(), got_s.size() * sizeof(double), cudaMemcpyDeviceToHost), "bench: top-k");
      TS_CUDA_CHECK(cudaMemcpy(got_f.data(), out_f.data(), got_f.size() * sizeof(int64_t), cudaMemcpyDeviceToHost), "bench: top-k");
      const std::string mismatch = bench::topk_twin_mismatch_from_logits(logits.data(), b, vocab, beam.data(), k, got_s.data(), got_f.data());
      if (!mismatch.empty()) {
        std::fprintf(stderr, "bench_cuda: beam step top-k differs from the CPU twin: %s\n", mismatch.c_str());
        return 1;
      }
      // minimum traffic: parent rows read + rows and mask written, mask read back,
      // the visible (token, position) pairs, logits written once and read twice
      // (the normaliser, the selection; its repeated passes over a chunk not counted)
      const double visible = double(b) * (prompt + generated);
      const double bytes = 3.0 * b * words * 8 + b * words * 8 + visible * 8 + 3.0 * b * vocab * 4;
      char label[128];
      std::snprintf(label, sizeof label, "beam step b=15, %d slots, vocab %d (7 kernels)", num_slots, vocab);
      report(label, bytes, ms, copy_gbps);
      {  // the same step as one CUDA graph (what a decoder replaying its step would pay)
        const double gms = bench::cuda_graph_median_ms(g_reps, step_on);
        status_ok(status, "bench: beam step graph");
        std::snprintf(label, sizeof label, "beam step b=15, vocab %d, as one CUDA graph", vocab);
        report(label, bytes, gms, copy_gbps);
      }
      // each part alone (the same inputs; top-k equal to the CPU twin, checked above)
      const struct {
        const char* name;
        std::function<void()> run;
      } parts[] = {{"kv write", [&] { synthetic_kv_write(w, nullptr); }},
                   {"mask extend", [&] { ancestor_mask_extend(e, nullptr); }},
                   {"synthetic logits", [&] { synthetic_logits(l, nullptr); }},
                   {"row log-normaliser (1 kernel)", [&] { row_log_normalisers(n, nullptr); }},
                   {"top-2b selection from the logits (2 kernels)", [&] { topk_candidates(t, nullptr); }},
                   {"the older log-softmax rows, not on the decode path (2 kernels)", [&] { log_softmax_rows(s, nullptr); }}};
      for (const auto& part : parts) {
        const double pm = time_ms(part.run);
        std::printf("  %-56s %10.4f ms\n", part.name, pm);
      }
      status_ok(status, "bench: beam step parts");
      // the k-round kernels this replaced (bench/legacy_selection.cmake: 9ae4cdc's, from git history), rep by rep
      // with the new ones on the same log-probs (the older log-softmax's: the k-round kernels read log-probs), same picks
      TopkCandidatesParams t_lp = t;
      t_lp.logprobs = d_lp.data();
      t_lp.maybe_logits = nullptr;
      t_lp.maybe_lse = nullptr;
      log_softmax_rows(s, nullptr);
      topk_candidates(t_lp, nullptr);
      std::vector<double> new_s(static_cast<size_t>(k)), old_s(static_cast<size_t>(k));
      std::vector<int64_t> new_f(static_cast<size_t>(k)), old_f(static_cast<size_t>(k));
      TS_CUDA_CHECK(cudaMemcpy(new_s.data(), out_s.data(), new_s.size() * sizeof(double), cudaMemcpyDeviceToHost), "bench: top-k");
      TS_CUDA_CHECK(cudaMemcpy(new_f.data(), out_f.data(), new_f.size() * sizeof(int64_t), cudaMemcpyDeviceToHost), "bench: top-k");
      const auto [new_ms, old_ms] = bench::cuda_interleaved_median_ms(g_reps, [&] { topk_candidates(t_lp, nullptr); }, [&] { bench::legacy::topk_candidates(t_lp, nullptr); });
      TS_CUDA_CHECK(cudaMemcpy(old_s.data(), out_s.data(), old_s.size() * sizeof(double), cudaMemcpyDeviceToHost), "bench: top-k");
      TS_CUDA_CHECK(cudaMemcpy(old_f.data(), out_f.data(), old_f.size() * sizeof(int64_t), cudaMemcpyDeviceToHost), "bench: top-k");
      if (old_s != new_s || old_f != new_f) {
        std::fprintf(stderr, "bench_cuda: the legacy top-k differs from the new one\n");
        return 1;
      }
      std::printf("  %-56s %10.4f ms  (new %.4f ms in the same reps: %.1fx)\n", "top-2b from log-probs, the k-round kernels it replaced", old_ms,
                  new_ms, old_ms / new_ms);
    }
    if (run_static) bench_static(false, false);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_cuda: %s\n", ex.what());
    return 1;
  }
  return 0;
}
