// Tree attention kernel micro-benchmark (cuda/tree_attention.cuh), CUDA
// events, one layer. For each prompt length P and beam width b, two layouts of
// the same decode state (b beams, t generated tokens each):
//   trie:  the prompt's P slots once, then b branches of t slots; query i
//          reads [0, P) + branch i  -> unique KV = P + b t slots;
//   batch: b private copies of prompt + beam; query i reads its own copy
//          -> unique KV = b (P + t) slots.
// The trie layout runs twice: "trie per-beam" (each query's own list, the
// kernel before the cascade) and "trie cascade" (the prompt attended once for
// all beams, tree_attention_cascade_build); the batch layout has no shared
// segment, so it runs the per-query lists either way.
// Achieved bandwidth = unique K/V bytes the kernel must read / kernel time,
// printed next to a cudaMemcpyDeviceToDevice of the same bytes in the same
// run (copy GB/s counts the bytes once, as read; a copy also writes them).
// "plan KV MB" = K/V bytes the launches read, summed over their blocks'
// chunks (tree_attention_kv_bytes; host arithmetic).
// Each timed output is also checked against the CPU twin (tree_attention_ref,
// double): the last column, max |kernel - twin| / max(1, |twin|).
// Needs a GPU (exits 77 when none is usable).
//   bench_tree_attention [--heads 32] [--kv-heads 8] [--head-dim 64] [--new 64]
//                        [--prompts 512,2048,8192] [--beams 3,9,15] [--reps 50]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/tree_attention.h"
#include "core/model/tree_attention_cascade.h"
#include "bench/cuda_event_timer.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/tree_attention.cuh"

using namespace triescope;
using namespace triescope::cuda;

namespace {

int g_reps = 50;

template <typename F>
double time_ms(F&& fn) {  // median of g_reps runs after one warm-up
  return bench::cuda_median_ms(g_reps, fn);
}

__global__ void fill_kernel(float* p, size_t n, uint32_t seed) {  // deterministic values in [-1, 1)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    p[i] = static_cast<float>(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& v) {
  DeviceBuffer<T> d(std::max<size_t>(v.size(), 1), "bench upload");
  TS_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "bench upload");
  return d;
}

std::vector<int32_t> int_list(const std::string& s) {
  std::vector<int32_t> v;
  std::stringstream ss(s);
  for (std::string tok; std::getline(ss, tok, ',');) v.push_back(std::stoi(tok));
  return v;
}

struct Result {
  double ms, copy_ms, unique_bytes, listed_bytes, plan_bytes;
  int32_t items;  // cascade items (0: per-query lists)
  double max_err;  // max |kernel - twin| / max(1, |twin|) over the output (the timed result is checked too)
};

// One layout: lists[i] = slots query i reads; `slots` = cache size;
// `cascade`: cut the lists into shared segments first.
Result run(const std::vector<std::vector<int32_t>>& lists, int32_t slots, int32_t heads, int32_t kv_heads, int32_t hd, bool cascade,
           int32_t sm_count) {
  AncestorCsr csr;
  csr.indptr.push_back(0);
  std::vector<char> seen(static_cast<size_t>(slots), 0);
  int64_t unique = 0;
  for (const auto& l : lists) {
    for (int32_t s : l) {
      csr.slot_ids.push_back(s);
      if (!seen[static_cast<size_t>(s)]) ++unique, seen[static_cast<size_t>(s)] = 1;
    }
    csr.indptr.push_back(static_cast<int32_t>(csr.slot_ids.size()));
    csr.max_row = std::max<int32_t>(csr.max_row, static_cast<int32_t>(l.size()));
  }
  const int32_t q = static_cast<int32_t>(lists.size());
  const size_t kv_n = static_cast<size_t>(2) * slots * kv_heads * hd;
  DeviceBuffer<float> kv(kv_n, "bench kv"), qv(static_cast<size_t>(q) * heads * hd, "bench q"), out(qv.size(), "bench out");
  fill_kernel<<<1024, 256>>>(kv.data(), kv_n, 1u);
  fill_kernel<<<64, 256>>>(qv.data(), qv.size(), 2u);
  TS_CUDA_CHECK_LAUNCH("fill_kernel");
  auto ptr = upload(csr.indptr);
  auto ids = upload(csr.slot_ids);
  DeviceBuffer<KernelStatus> status(1, "bench status");
  TS_CUDA_CHECK(cudaMemset(status.data(), 0, sizeof(KernelStatus)), "bench status");
  TreeAttentionArgs a;
  a.q = qv.data();
  a.kv = kv.data();
  a.indptr = ptr.data();
  a.slot_ids = ids.data();
  a.out = out.data();
  a.num_queries = q;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = hd;
  a.capacity = slots;
  a.max_row = csr.max_row;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.status = reinterpret_cast<int32_t*>(status.data());
  TreeAttentionCascadeTable table;
  if (cascade) {
    TreeAttentionArgs h = a;
    h.indptr = csr.indptr.data();
    h.slot_ids = csr.slot_ids.data();
    table = tree_attention_cascade_build(h, tree_attention_cascade_tile_rows(hd), 4 * sm_count);
  }
  auto d_table = upload(table.table);
  if (table.items > 0) a.cascade = table.view(d_table.data());
  a.workspace_bytes = tree_attention_workspace_bytes(a);
  DeviceBuffer<unsigned char> ws(std::max<size_t>(a.workspace_bytes, 1), "bench workspace");
  a.workspace = ws.data();
  Result r;
  const double row_bytes = 2.0 * kv_heads * hd * sizeof(float);  // K and V of one slot, one layer
  r.unique_bytes = static_cast<double>(unique) * row_bytes;
  r.listed_bytes = static_cast<double>(csr.slot_ids.size()) * row_bytes;
  r.plan_bytes = tree_attention_kv_bytes(a, tree_attention_plan(a, sm_count), static_cast<int64_t>(csr.slot_ids.size()));
  r.items = table.items;
  r.ms = time_ms([&] { tree_attention(a); });
  status_check(status.data(), nullptr, "bench tree_attention");
  {  // the output against the CPU twin on the same data
    std::vector<float> hq(qv.size()), hkv(kv_n), hout(out.size());
    TS_CUDA_CHECK(cudaMemcpy(hq.data(), qv.data(), qv.bytes(), cudaMemcpyDeviceToHost), "bench download q");
    TS_CUDA_CHECK(cudaMemcpy(hkv.data(), kv.data(), kv.bytes(), cudaMemcpyDeviceToHost), "bench download kv");
    TS_CUDA_CHECK(cudaMemcpy(hout.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost), "bench download out");
    TreeAttentionArgs h = a;
    h.q = hq.data();
    h.kv = hkv.data();
    h.indptr = csr.indptr.data();
    h.slot_ids = csr.slot_ids.data();
    h.out = hout.data();
    h.cascade = TreeAttentionCascade{};  // the twin is the definition, whatever the kernel ran
    std::vector<double> want;
    tree_attention_ref(h, want);
    r.max_err = 0.0;
    for (size_t i = 0; i < want.size(); ++i)
      r.max_err = std::max(r.max_err, std::fabs(static_cast<double>(hout[i]) - want[i]) / std::max(1.0, std::fabs(want[i])));
  }
  const size_t copy_bytes = static_cast<size_t>(r.unique_bytes);
  DeviceBuffer<unsigned char> src(copy_bytes, "bench copy src"), dst(copy_bytes, "bench copy dst");
  TS_CUDA_CHECK(cudaMemset(src.data(), 1, copy_bytes), "bench copy fill");
  r.copy_ms = time_ms([&] {
    TS_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), copy_bytes, cudaMemcpyDeviceToDevice, nullptr), "bench D2D copy");
  });
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> o = {{"heads", "32"},    {"kv-heads", "8"},           {"head-dim", "64"}, {"new", "64"},
                                          {"beams", "3,9,15"}, {"prompts", "512,2048,8192"}, {"reps", "50"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !o.count(k.substr(2))) {
      std::fprintf(stderr, "bench_tree_attention: unknown option %s\n", k.c_str());
      return 2;
    }
    o[k.substr(2)] = argv[i + 1];
  }
  std::string why;
  if (device_count(&why) == 0) {
    std::printf("bench_tree_attention: SKIPPED, no usable CUDA device (%s)\n", why.c_str());
    return 77;
  }
  try {
    g_reps = std::max(1, std::stoi(o["reps"]));
    const int32_t heads = std::stoi(o["heads"]), kvh = std::stoi(o["kv-heads"]), hd = std::stoi(o["head-dim"]), t = std::stoi(o["new"]);
    cudaDeviceProp prop;
    TS_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0), "bench: device properties");
    int drv = 0;
    cudaDriverGetVersion(&drv);
    std::printf("device: %s (%d SMs), driver %d; one layer: heads %d, kv_heads %d, head_dim %d, fp32; t = %d generated tokens "
                "per beam; median of %d runs\n",
                prop.name, prop.multiProcessorCount, drv, heads, kvh, hd, t, g_reps);
    std::printf("| P | b | layout | unique KV MB | listed KV MB | plan KV MB | cascade items | kernel ms | kernel GB/s (unique) | "
                "D2D copy ms | copy GB/s | kernel/copy bandwidth | max err vs twin |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int32_t P : int_list(o["prompts"]))
      for (int32_t b : int_list(o["beams"])) {
        std::vector<std::vector<int32_t>> trie(static_cast<size_t>(b)), batch(static_cast<size_t>(b));
        for (int32_t i = 0; i < b; ++i) {
          auto& l = trie[static_cast<size_t>(i)];
          for (int32_t s = 0; s < P; ++s) l.push_back(s);
          for (int32_t k = 0; k < t; ++k) l.push_back(P + i * t + k);
          auto& m = batch[static_cast<size_t>(i)];
          for (int32_t s = 0; s < P + t; ++s) m.push_back(i * (P + t) + s);
        }
        const char* names[3] = {"trie per-beam", "trie cascade", "batch"};
        double ms[3] = {0, 0, 0};
        for (int layout = 0; layout < 3; ++layout) {
          const Result r = layout < 2 ? run(trie, P + b * t, heads, kvh, hd, layout == 1, prop.multiProcessorCount)
                                      : run(batch, b * (P + t), heads, kvh, hd, true, prop.multiProcessorCount);
          const double g = r.unique_bytes / (r.ms * 1e-3) / 1e9, cg = r.unique_bytes / (r.copy_ms * 1e-3) / 1e9;
          std::printf("| %d | %d | %s | %.2f | %.2f | %.2f | %d | %.4f | %.1f | %.4f | %.1f | %.2f | %.1e |\n", P, b, names[layout],
                      r.unique_bytes / 1e6, r.listed_bytes / 1e6, r.plan_bytes / 1e6, r.items, r.ms, g, r.copy_ms, cg, g / cg, r.max_err);
          ms[layout] = r.ms;
        }
        std::printf("| %d | %d | batch / trie cascade kernel time | | | | | %.2fx | | | | | |\n", P, b, ms[2] / ms[1]);
        std::printf("| %d | %d | trie per-beam / trie cascade kernel time | | | | | %.2fx | | | | | |\n", P, b, ms[0] / ms[1]);
        std::printf("| %d | %d | batch / trie per-beam kernel time | | | | | %.2fx | | | | | |\n", P, b, ms[2] / ms[0]);
        std::fflush(stdout);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tree_attention: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
