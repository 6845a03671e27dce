// CUDA micro-benchmarks for the fast path, timed with CUDA events; each
// kernel's achieved bandwidth is printed next to the device-to-device
// cudaMemcpy bandwidth measured in the same run. Needs a GPU (exits 77 when
// none is usable). Run: build/bench/bench_cuda [--reps N]
//   1. ancestor mask for 4096 queries x 65536 slots: full build (chain walks)
//      and incremental build (one parallel row copy per new row);
//   2. KV compaction of a 1 GiB cache (Phi-3.5-mini-like slot, 384 KiB);
//   3. one trie beam step at b = 15 (K/V write, mask extend, synthetic
//      logits, log-softmax, top-2b) at the end of synthetic_long's decode.
// Bytes are counted as the minimum a kernel must read plus write.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/ancestor_mask.cuh"
#include "cuda/beam_select.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/kv_compact.cuh"
#include "cuda/synthetic_logits.cuh"

using namespace triescope;
using namespace triescope::cuda;

namespace {

int g_reps = 20;

// Median milliseconds of `reps` runs of fn on the default stream (after one warm-up).
template <typename F>
double time_ms(F&& fn) {
  cudaEvent_t a, b;
  TS_CUDA_CHECK(cudaEventCreate(&a), "bench: event");
  TS_CUDA_CHECK(cudaEventCreate(&b), "bench: event");
  fn();
  TS_CUDA_CHECK(cudaDeviceSynchronize(), "bench: warm-up");
  std::vector<double> ms;
  for (int i = 0; i < g_reps; ++i) {
    TS_CUDA_CHECK(cudaEventRecord(a), "bench: record");
    fn();
    TS_CUDA_CHECK(cudaEventRecord(b), "bench: record");
    TS_CUDA_CHECK(cudaEventSynchronize(b), "bench: sync");
    float t = 0;
    TS_CUDA_CHECK(cudaEventElapsedTime(&t, a, b), "bench: elapsed");
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
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

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) g_reps = std::max(1, std::atoi(argv[++i]));
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
      DeviceBuffer<double> ws_s(static_cast<size_t>(b) * k, "ws"), out_s(k, "out");
      DeviceBuffer<int64_t> ws_f(static_cast<size_t>(b) * k, "ws"), out_f(k, "out");
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
      s.maybe_status = status.data();
      TopkCandidatesParams t;
      t.logprobs = d_lp.data();
      t.beam_scores = d_beam.data();
      t.num_rows = b;
      t.vocab = vocab;
      t.k = k;
      t.workspace_score = ws_s.data();
      t.workspace_flat = ws_f.data();
      t.out_score = out_s.data();
      t.out_flat = out_f.data();
      t.out_count = count.data();
      const double ms = time_ms([&] {
        synthetic_kv_write(w, nullptr);
        ancestor_mask_extend(e, nullptr);
        synthetic_logits(l, nullptr);
        log_softmax_rows(s, nullptr);
        topk_candidates(t, nullptr);
      });
      status_ok(status, "bench: beam step");
      // minimum traffic: parent rows read + rows and mask written, mask read back,
      // the visible (token, position) pairs, logits written and read, logprobs
      // written and read (k passes by the top-k rows kernel not counted)
      const double visible = double(b) * (prompt + generated);
      const double bytes = 3.0 * b * words * 8 + b * words * 8 + visible * 8 + 2.0 * b * vocab * 4 + 2.0 * b * vocab * 8;
      char label[128];
      std::snprintf(label, sizeof label, "beam step b=15, %d slots, vocab %d (5 kernels)", num_slots, vocab);
      report(label, bytes, ms, copy_gbps);
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_cuda: %s\n", ex.what());
    return 1;
  }
  return 0;
}
