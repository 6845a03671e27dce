// The host half of cuda::tree_attention, checked on the CPU: how a launch
// cuts the work (tree_attention_plan), and a CPU emulation of the kernel's
// decomposition against the double twin.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "core/mask/ancestor_mask.h"
#include "core/model/tree_attention.h"
#include "cuda/tree_attention.cuh"
#include "cuda/tree_attention_math.h"
#include "test_util.h"

using namespace triescope;

TEST_CASE("tree_attention_plan covers every list entry with chunks of >= 64 and fills the device", "[cuda][tree_attention]") {
  const int32_t q = GENERATE(1, 3, 15, 300);
  const int32_t max_row = GENERATE(0, 1, 63, 64, 65, 4096, 100000);
  const int32_t kv_heads = GENERATE(1, 8);
  const int32_t group = GENERATE(1, 3, 4, 16);
  const int32_t hd = GENERATE(16, 64, 128, 256);
  CAPTURE(q, max_row, kv_heads, group, hd);
  TreeAttentionArgs a;
  a.num_queries = q;
  a.max_row = max_row;
  a.kv_heads = kv_heads;
  a.heads = kv_heads * group;
  a.head_dim = hd;
  const cuda::TreeAttentionPlan p = cuda::tree_attention_plan(a, 132);
  CHECK(p.vec * 32 >= hd);
  CHECK((p.vec == 1 || (p.vec - 1) * 32 < hd));
  CHECK(p.heads_per_block * p.head_groups >= group);
  CHECK((p.head_groups - 1) * p.heads_per_block < group);
  CHECK(p.heads_per_block <= (p.vec == 8 ? 4 : 8));
  CHECK(p.splits >= 1);
  CHECK(int64_t{p.splits} * p.chunk >= max_row);            // every entry is in some split
  CHECK(int64_t{p.splits - 1} * p.chunk < std::max(max_row, 1));  // no empty tail split
  if (p.splits > 1) CHECK(p.chunk >= 64);
  const int64_t blocks = int64_t{q} * kv_heads * p.head_groups * p.splits;
  if (p.splits == 1 && max_row >= 128) CHECK(int64_t{q} * kv_heads * p.head_groups >= 4 * 132 / 2);  // split only when the grid is small
  CHECK(blocks >= 1);
  CHECK((p.splits == 1) == (cuda::tree_attention_workspace_bytes(p, a) == 0));
  a.head_dim = 257;
  CHECK_THROWS_WITH(cuda::tree_attention_plan(a, 132), Catch::Contains("head_dim = 257"));
}

// ---------------------------------------------------------------------------
// A CPU emulation of the kernel's decomposition, built from the same plan and
// the same helpers (cuda/tree_attention_math.h): blocks (query, head group,
// split), kWarps warps each running its own online softmax over every
// kWarps-th entry, the warp merge, then the split combine. Only the dot
// product's summation order differs from the device (sequential here, a
// shuffle tree there). Checked against the double twin.

namespace {
std::vector<float> emulate(const TreeAttentionArgs& a, const cuda::TreeAttentionPlan& p) {
  namespace ta = cuda::ta;
  const int32_t hd = a.head_dim, group = a.heads / a.kv_heads;
  const int64_t row = int64_t{a.kv_heads} * hd;
  std::vector<float> out(static_cast<size_t>(int64_t{a.num_queries} * a.heads * hd), std::nanf(""));
  std::vector<float> part_acc(static_cast<size_t>(int64_t{a.num_queries} * a.heads * p.splits * hd), std::nanf(""));
  std::vector<float> part_ml(static_cast<size_t>(int64_t{a.num_queries} * a.heads * p.splits * 2), std::nanf(""));
  for (int32_t r = 0; r < a.num_queries; ++r)
    for (int32_t y = 0; y < a.kv_heads * p.head_groups; ++y)
      for (int32_t split = 0; split < p.splits; ++split) {
        const ta::Heads hb = ta::block_heads(y, p.head_groups, p.heads_per_block, group);
        const ta::Range rg = ta::split_range(a.indptr[r], a.indptr[r + 1], split, p.splits, p.chunk);
        for (int32_t h = 0; h < hb.nh; ++h) {
          const float* qv = a.q + (int64_t{r} * a.heads + hb.h0 + h) * hd;
          std::vector<float> wm(ta::kWarps, -INFINITY), wl(ta::kWarps, 0.0f), wacc(static_cast<size_t>(ta::kWarps * hd), 0.0f);
          for (int w = 0; w < ta::kWarps; ++w)
            for (int32_t j = rg.lo + w; j < rg.hi; j += ta::kWarps) {
              const int32_t s = a.slot_ids[j];
              const float* k = a.kv + int64_t{s} * row + int64_t{hb.kvh} * hd;
              const float* v = a.kv + int64_t{a.capacity} * row + int64_t{s} * row + int64_t{hb.kvh} * hd;
              float dot = 0.0f;
              for (int32_t d = 0; d < hd; ++d) dot = std::fma(qv[d] * a.scale, k[d], dot);
              const ta::Step st = ta::online_step(wm[static_cast<size_t>(w)], dot);
              wl[static_cast<size_t>(w)] = wl[static_cast<size_t>(w)] * st.corr + st.p;
              for (int32_t d = 0; d < hd; ++d) {
                float& acc = wacc[static_cast<size_t>(w * hd + d)];
                acc = std::fma(st.p, v[d], acc * st.corr);
              }
              wm[static_cast<size_t>(w)] = st.m_new;
            }
          float M = -INFINITY;
          for (int w = 0; w < ta::kWarps; ++w) M = std::fmax(M, wm[static_cast<size_t>(w)]);
          const int64_t oh = int64_t{r} * a.heads + hb.h0 + h;
          for (int32_t d = 0; d < hd; ++d) {
            float L = 0.0f, A = 0.0f;
            for (int w = 0; w < ta::kWarps; ++w) {
              const float f = ta::merge_factor(wm[static_cast<size_t>(w)], M);
              L = std::fma(wl[static_cast<size_t>(w)], f, L);
              A = std::fma(wacc[static_cast<size_t>(w * hd + d)], f, A);
            }
            if (p.splits == 1) {
              out[static_cast<size_t>(oh * hd + d)] = ta::finish(A, L);
            } else {
              const int64_t ps = oh * p.splits + split;
              part_acc[static_cast<size_t>(ps * hd + d)] = A;
              part_ml[static_cast<size_t>(ps * 2)] = M;
              part_ml[static_cast<size_t>(ps * 2 + 1)] = L;
            }
          }
        }
      }
  if (p.splits > 1)
    for (int64_t oh = 0; oh < int64_t{a.num_queries} * a.heads; ++oh) {
      float M = -INFINITY;
      for (int32_t s = 0; s < p.splits; ++s) M = std::fmax(M, part_ml[static_cast<size_t>((oh * p.splits + s) * 2)]);
      for (int32_t d = 0; d < hd; ++d) {
        float L = 0.0f, A = 0.0f;
        for (int32_t s = 0; s < p.splits; ++s) {
          const int64_t ps = oh * p.splits + s;
          const float f = cuda::ta::merge_factor(part_ml[static_cast<size_t>(ps * 2)], M);
          L = std::fma(part_ml[static_cast<size_t>(ps * 2 + 1)], f, L);
          A = std::fma(part_acc[static_cast<size_t>(ps * hd + d)], f, A);
        }
        out[static_cast<size_t>(oh * hd + d)] = cuda::ta::finish(A, L);
      }
    }
  return out;
}
}  // namespace

TEST_CASE("the kernel's decomposition (CPU emulation) equals the twin: splits, GQA head groups, empty lists", "[cuda][tree_attention]") {
  const int32_t heads = GENERATE(4, 12, 32);
  const int32_t kv_heads = GENERATE(1, 4);
  const int32_t sm = GENERATE(1, 132, 100000);  // few SMs: no split; many: the lists split into chunks
  const int32_t variant = GENERATE(0, 1);       // 1: one empty list and a max_row that undercounts
  const uint64_t seed = testing::test_seed(static_cast<uint64_t>(heads * 100 + kv_heads * 10 + variant) * 1000003u + static_cast<uint64_t>(sm));
  CAPTURE(heads, kv_heads, sm, variant, seed);
  if (heads % kv_heads) return;
  std::mt19937_64 rng(seed);
  const int32_t hd = std::uniform_int_distribution<int32_t>(1, 40)(rng);
  // A prompt chain of 700 and 300 nodes branching below it; queries anywhere.
  TokenTree t;
  const auto chain = t.add_chain(kNoNode, std::vector<int32_t>(700, 1));
  for (int32_t i = 700; i < 1000; ++i) t.add_child(std::uniform_int_distribution<int32_t>(600, i - 1)(rng), 1, 0.0);
  for (int32_t i = 0; i < 1000; ++i) t.node(i).slot = 999 - i;  // slots in reverse: lists are not runs of the node order
  (void)chain;
  std::vector<int32_t> queries(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 9)(rng)));
  for (auto& q : queries) q = std::uniform_int_distribution<int32_t>(0, 999)(rng);
  AncestorCsr csr = ancestor_csr(ancestor_mask_build(t, queries, 1000));
  if (variant == 1) {
    const int32_t cut = csr.indptr[1];
    csr.slot_ids.erase(csr.slot_ids.begin(), csr.slot_ids.begin() + cut);
    for (size_t k = 1; k < csr.indptr.size(); ++k) csr.indptr[k] -= cut;
  }
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> qv(queries.size() * static_cast<size_t>(heads * hd)), kv(static_cast<size_t>(2 * 1003 * kv_heads * hd)), unused(qv.size());
  for (auto& x : qv) x = n(rng);
  for (auto& x : kv) x = n(rng);
  TreeAttentionArgs a;
  a.q = qv.data();
  a.kv = kv.data();
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  a.out = unused.data();
  a.num_queries = static_cast<int32_t>(queries.size());
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = hd;
  a.capacity = 1003;
  a.max_row = csr.max_row;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<double> want;
  tree_attention_ref(a, want);
  if (variant == 1) a.max_row = std::max(1, csr.max_row / 3);  // the plan must still cover every entry (last split runs to the end)
  const cuda::TreeAttentionPlan p = cuda::tree_attention_plan(a, sm);
  CAPTURE(p.splits, p.chunk, p.heads_per_block, p.head_groups);
  if (sm == 100000 && csr.max_row >= 256 && variant == 0) CHECK(p.splits > 1);
  const std::vector<float> got = emulate(a, p);
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::fabs(want[i]));
    worst = std::isnan(e) ? 1e30 : std::max(worst, e);
  }
  CHECK(worst <= 1e-5);
}
