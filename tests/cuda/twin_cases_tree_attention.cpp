// Twin cases of cuda/tree_attention.cu (twin_kernels.h's launcher) against
// its CPU twin tree_attention_ref (double, core/model/tree_attention.h):
//  - the item kernel on random forests (an empty list included: zeros) and
//    on a long shared prompt (lists split across blocks);
//  - the kernel's decomposition (host twin only): a CPU emulation built from the
//    same plan and helpers (cuda/tree_attention_math.h) at 1, 132 and 100000
//    SMs (no split, splits), GQA head groups, an empty list and a max_row
//    that undercounts;
//  - the cascade over trie segments (core/model/tree_attention_cascade.h),
//    host twin tree_attention_cascade_ref.
// Tolerances, per element |got - twin| <= tol * max(1, |twin|) (NaN, the
// poison, fails): the device 1e-4 (an online softmax in fp32 with another
// summation order; the transformer tests' logits tolerance); the emulation
// 1e-5 (fp32 too; only the dot product's summation order differs from the
// device); the cascade twin 1e-12 (the decomposition is exact in double).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/mask/ancestor_mask.h"
#include "cuda/tree_attention.cuh"
#include "cuda/tree_attention_math.h"
#include "test_util.h"
#include "twin_cases.h"
#include "twin_kernels.h"

namespace triescope::testing {
namespace {

size_t at(int64_t i) { return static_cast<size_t>(i); }

double worst_excess(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0.0;  // max of |got - want| / max(1, |want|); NaN (poison) counts as failure
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i]));
    worst = std::isnan(e) ? 1e30 : std::max(worst, e);
  }
  return worst;
}

// The inputs around ancestor lists: q and K/V drawn N(0, 1), the cache
// `spare` slots larger than the lists need, scale 1 / sqrt(head_dim).
TreeAttentionIn attention_inputs(std::mt19937_64& rng, AncestorCsr csr, int32_t heads, int32_t kv_heads, int32_t head_dim, int32_t capacity) {
  TreeAttentionIn in;
  in.csr = std::move(csr);
  TreeAttentionArgs& a = in.shape;
  a.num_queries = static_cast<int32_t>(in.csr.indptr.size()) - 1;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.capacity = capacity;
  a.max_row = in.csr.max_row;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  std::normal_distribution<float> n(0.0f, 1.0f);
  in.q.resize(at(a.num_queries) * at(heads) * at(head_dim));
  in.kv.resize(at(2) * at(capacity) * at(kv_heads) * at(head_dim));
  for (auto& x : in.q) x = n(rng);
  for (auto& x : in.kv) x = n(rng);
  return in;
}

// The first query's list emptied: kernel and twin both give zeros.
void empty_first_list(AncestorCsr& csr) {
  if (csr.indptr.size() <= 2) return;
  const int32_t cut = csr.indptr[1];
  csr.slot_ids.erase(csr.slot_ids.begin(), csr.slot_ids.begin() + cut);
  for (size_t k = 1; k < csr.indptr.size(); ++k) csr.indptr[k] -= cut;
}

TreeAttentionOut attention_twin(const TreeAttentionIn& in) {
  std::vector<float> unused;
  TreeAttentionArgs a = in.host_args(unused);
  a.cascade = TreeAttentionCascade{};  // the definition reads the plain lists
  TreeAttentionOut o;
  tree_attention_ref(a, o.out);
  return o;
}

void attention_compare(const TreeAttentionIn& in, const TreeAttentionOut& want, const TreeAttentionOut& got, double tol) {
  const TreeAttentionArgs& a = in.shape;
  CAPTURE(a.num_queries, a.heads, a.kv_heads, a.head_dim, a.capacity, a.max_row, in.cascade.items);
  CHECK(got.status.code == 0);
  REQUIRE(got.out.size() == want.out.size());
  CHECK(worst_excess(got.out, want.out) <= tol);
}

// (query heads, KV heads, head dim): GQA groups 1 to 12, head dims 16 to 256
// (48, 80, 100: not a power of two).
const std::vector<std::vector<int64_t>> kForestShapes = {{4, 4, 32}, {8, 2, 64},  {32, 8, 64}, {16, 2, 128}, {8, 1, 256},
                                                         {6, 2, 48}, {5, 5, 80}, {64, 4, 64}, {12, 1, 100}, {3, 1, 16}};

// Random forests of 1 to 900 nodes, 1 to 40 queries anywhere; variant 1
// empties the first query's list.
TreeAttentionIn random_forest_attention(std::mt19937_64& rng, const TwinPoint& pt) {
  const int32_t nodes = draw(rng, 1, 900);
  const int32_t num_slots = nodes + draw(rng, 0, 40);
  const TokenTree t = random_forest(rng, nodes, draw(rng, 1, 4), num_slots, 0.05, false);
  std::vector<int32_t> queries(at(draw(rng, 1, 40)));
  for (auto& q : queries) q = draw(rng, 0, nodes - 1);
  AncestorCsr csr = ancestor_csr(ancestor_mask_build(t, queries, num_slots));
  if (pt.variant == 1) empty_first_list(csr);
  return attention_inputs(rng, std::move(csr), dim(pt, 0), dim(pt, 1), dim(pt, 2), num_slots + draw(rng, 0, 9));
}

[[maybe_unused]] const bool forests = twin_register(TwinSpec<TreeAttentionIn, TreeAttentionOut>{
    .name = "tree_attention on random forests, an empty list included",
    .kernel = "cuda/tree_attention.cu",
    .tags = "[cuda][tree_attention]",
    .shapes = kForestShapes,
    .device_variants = 3,
    .inputs = random_forest_attention,
    .cpu = attention_twin,
    .device = tree_attention_on_device,
    .compare = [](const TwinPoint&, const TreeAttentionIn& in, const TreeAttentionOut& want,
                  const TreeAttentionOut& got) { attention_compare(in, want, got, 1e-4); },
});

// A prompt chain of 5000, then 1000 nodes branching under its tail: lists
// of ~5000 entries, split across blocks. On the host runtime only the
// shapes up to 400 values per query (1 to 8 s each there).
std::vector<std::vector<int64_t>> long_prompt_shapes() {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& s : kForestShapes) {
#ifdef TRIESCOPE_CUDA_HOST_RUNTIME
    if (s[0] * s[2] > 400) continue;
#endif
    shapes.push_back(s);
  }
  return shapes;
}

[[maybe_unused]] const bool long_prompt = twin_register(TwinSpec<TreeAttentionIn, TreeAttentionOut>{
    .name = "tree_attention under a long shared prompt, lists split across blocks",
    .kernel = "cuda/tree_attention.cu",
    .tags = "[cuda][tree_attention]",
    .shapes = long_prompt_shapes(),
    .device_variants = 1,
    .inputs =
        [](std::mt19937_64& rng, const TwinPoint& pt) {
          constexpr int32_t kPrompt = 5000, kNodes = 6000;
          TokenTree t;
          const auto chain = t.add_chain(kNoNode, std::vector<int32_t>(kPrompt, 1));
          for (int32_t i = kPrompt; i < kNodes; ++i) t.add_child(std::bernoulli_distribution(0.2)(rng) ? chain.back() : draw(rng, kPrompt - 10, i - 1), 1, 0.0);
          for (int32_t i = 0; i < kNodes; ++i) t.node(i).slot = i;
          std::vector<int32_t> queries(at(draw(rng, 1, 40)));
          for (auto& q : queries) q = draw(rng, 0, kNodes - 1);
          return attention_inputs(rng, ancestor_csr(ancestor_mask_build(t, queries, kNodes)), dim(pt, 0), dim(pt, 1), dim(pt, 2),
                                  kNodes + draw(rng, 0, 9));
        },
    .cpu = attention_twin,
    .device = tree_attention_on_device,
    .compare =
        [](const TwinPoint&, const TreeAttentionIn& in, const TreeAttentionOut& want, const TreeAttentionOut& got) {
          attention_compare(in, want, got, 1e-4);
        },
});

// ---------------------------------------------------------------------------
// A CPU emulation of the kernel's decomposition, built from the same plan and
// the same helpers (cuda/tree_attention_math.h): blocks (query, head group,
// split), kWarps warps each running its own online softmax over every
// kWarps-th entry, the warp merge, then the split combine. Only the dot
// product's summation order differs from the device (sequential here, a
// shuffle tree there).
std::vector<float> emulate(const TreeAttentionArgs& a, const cuda::TreeAttentionPlan& p) {
  namespace ta = cuda::ta;
  const int32_t hd = a.head_dim, group = a.heads / a.kv_heads;
  const int64_t row = int64_t{a.kv_heads} * hd;
  std::vector<float> out(at(int64_t{a.num_queries} * a.heads * hd), std::nanf(""));
  std::vector<float> part_acc(at(int64_t{a.num_queries} * a.heads * p.splits * hd), std::nanf(""));
  std::vector<float> part_ml(at(int64_t{a.num_queries} * a.heads * p.splits * 2), std::nanf(""));
  for (int32_t r = 0; r < a.num_queries; ++r)
    for (int32_t y = 0; y < a.kv_heads * p.head_groups; ++y)
      for (int32_t split = 0; split < p.splits; ++split) {
        const ta::Heads hb = ta::block_heads(y, p.head_groups, p.heads_per_block, group);
        const ta::Range rg = ta::split_range(a.indptr[r], a.indptr[r + 1], split, p.splits, p.chunk);
        for (int32_t h = 0; h < hb.nh; ++h) {
          const float* qv = a.q + (int64_t{r} * a.heads + hb.h0 + h) * hd;
          std::vector<float> wm(ta::kWarps, -INFINITY), wl(ta::kWarps, 0.0f), wacc(at(ta::kWarps * hd), 0.0f);
          for (int w = 0; w < ta::kWarps; ++w)
            for (int32_t j = rg.lo + w; j < rg.hi; j += ta::kWarps) {
              const int32_t s = a.slot_ids[j];
              const float* k = a.kv + int64_t{s} * row + int64_t{hb.kvh} * hd;
              const float* v = a.kv + int64_t{a.capacity} * row + int64_t{s} * row + int64_t{hb.kvh} * hd;
              float dot = 0.0f;
              for (int32_t d = 0; d < hd; ++d) dot = std::fma(qv[d] * a.scale, k[d], dot);
              const ta::Step st = ta::online_step(wm[at(w)], dot);
              wl[at(w)] = wl[at(w)] * st.corr + st.p;
              for (int32_t d = 0; d < hd; ++d) {
                float& acc = wacc[at(w * hd + d)];
                acc = std::fma(st.p, v[d], acc * st.corr);
              }
              wm[at(w)] = st.m_new;
            }
          float M = -INFINITY;
          for (int w = 0; w < ta::kWarps; ++w) M = std::fmax(M, wm[at(w)]);
          const int64_t oh = int64_t{r} * a.heads + hb.h0 + h;
          for (int32_t d = 0; d < hd; ++d) {
            float L = 0.0f, A = 0.0f;
            for (int w = 0; w < ta::kWarps; ++w) {
              const float f = ta::merge_factor(wm[at(w)], M);
              L = std::fma(wl[at(w)], f, L);
              A = std::fma(wacc[at(w * hd + d)], f, A);
            }
            if (p.splits == 1) {
              out[at(oh * hd + d)] = ta::finish(A, L);
            } else {
              const int64_t ps = oh * p.splits + split;
              part_acc[at(ps * hd + d)] = A;
              part_ml[at(ps * 2)] = M;
              part_ml[at(ps * 2 + 1)] = L;
            }
          }
        }
      }
  if (p.splits > 1)
    for (int64_t oh = 0; oh < int64_t{a.num_queries} * a.heads; ++oh) {
      float M = -INFINITY;
      for (int32_t s = 0; s < p.splits; ++s) M = std::fmax(M, part_ml[at((oh * p.splits + s) * 2)]);
      for (int32_t d = 0; d < hd; ++d) {
        float L = 0.0f, A = 0.0f;
        for (int32_t s = 0; s < p.splits; ++s) {
          const int64_t ps = oh * p.splits + s;
          const float f = cuda::ta::merge_factor(part_ml[at(ps * 2)], M);
          L = std::fma(part_ml[at(ps * 2 + 1)], f, L);
          A = std::fma(part_acc[at(ps * hd + d)], f, A);
        }
        out[at(oh * hd + d)] = cuda::ta::finish(A, L);
      }
    }
  return out;
}

// (query heads, KV heads, SMs the host twin's plan fills): few SMs, no
// split; many, the lists split into chunks.
std::vector<std::vector<int64_t>> decomposition_shapes() {
  std::vector<std::vector<int64_t>> shapes;
  for (const int64_t heads : {4, 12, 32})
    for (const int64_t kv_heads : {1, 4})
      for (const int64_t sms : {1, 132, 100000}) shapes.push_back({heads, kv_heads, sms});
  return shapes;
}

// A prompt chain of 700 and 300 nodes branching below it, slots in reverse
// (lists are not runs of the node order), 1 to 9 queries anywhere, head dim
// 1 to 40. Variant 1: an empty list, and a max_row that undercounts (the
// plan must still cover every entry: the last split runs to the end).
TreeAttentionIn decomposition_inputs(std::mt19937_64& rng, const TwinPoint& pt) {
  const int32_t hd = draw(rng, 1, 40);
  TokenTree t;
  t.add_chain(kNoNode, std::vector<int32_t>(700, 1));
  for (int32_t i = 700; i < 1000; ++i) t.add_child(draw(rng, 600, i - 1), 1, 0.0);
  for (int32_t i = 0; i < 1000; ++i) t.node(i).slot = 999 - i;
  std::vector<int32_t> queries(at(draw(rng, 1, 9)));
  for (auto& q : queries) q = draw(rng, 0, 999);
  AncestorCsr csr = ancestor_csr(ancestor_mask_build(t, queries, 1000));
  if (pt.variant == 1) empty_first_list(csr);
  TreeAttentionIn in = attention_inputs(rng, std::move(csr), dim(pt, 0), dim(pt, 1), hd, 1003);
  if (pt.variant == 1) in.plan_max_row = std::max(1, in.csr.max_row / 3);
  in.plan_sms = dim(pt, 2);
  return in;
}

// The arguments the host twin plans for: max_row as it is told.
TreeAttentionArgs plan_args(const TreeAttentionIn& in, std::vector<float>& out) {
  TreeAttentionArgs a = in.host_args(out);
  if (in.plan_max_row > 0) a.max_row = in.plan_max_row;
  return a;
}

[[maybe_unused]] const bool decomposition = twin_register(TwinSpec<TreeAttentionIn, TreeAttentionOut>{
    .name = "tree_attention's decomposition: splits, GQA head groups, empty lists",
    .kernel = "cuda/tree_attention.cu",
    .tags = "[cuda][tree_attention]",
    .shapes = decomposition_shapes(),
    .host_variants = 2,
    // No device execution: the device fills its own SMs, so the shapes' SM
    // counts would repeat one launch three times; the forests' and the long
    // prompt's cases launch these lists' kinds (GQA groups, splits, an empty list).
    .inputs = decomposition_inputs,
    .cpu = attention_twin,
    .host_twin =
        [](const TreeAttentionIn& in, int32_t) {
          std::vector<float> unused;
          const TreeAttentionArgs a = plan_args(in, unused);
          const std::vector<float> got = emulate(a, cuda::tree_attention_plan(a, in.plan_sms));
          return TreeAttentionOut{std::vector<double>(got.begin(), got.end()), {}};
        },
    .compare =
        [](const TwinPoint& pt, const TreeAttentionIn& in, const TreeAttentionOut& want, const TreeAttentionOut& got) {
          std::vector<float> unused;
          const cuda::TreeAttentionPlan p = cuda::tree_attention_plan(plan_args(in, unused), in.plan_sms);
          CAPTURE(in.plan_sms, p.splits, p.chunk, p.heads_per_block, p.head_groups);
          if (in.plan_sms == 100000 && in.csr.max_row >= 256 && pt.variant == 0) CHECK(p.splits > 1);
          attention_compare(in, want, got, 1e-5);
        },
});

// ---------------------------------------------------------------------------
// The cascade: a trie step, a prompt chain of 40 to 700 slots, then `beams`
// branches sharing random stretches below it (each a chain forking off an
// earlier branch or the prompt's tail), each 1 to 90 tokens deep; one query
// per beam leaf. Variant 1: slots shuffled; 2: 40 beams (several tiles per
// segment; on the host twin under a prompt of at most 160).
AncestorCsr trie_lists(std::mt19937_64& rng, int32_t prompt, int32_t beams, int32_t tail, bool shuffle) {
  TokenTree t;
  const auto chain = t.add_chain(kNoNode, std::vector<int32_t>(at(prompt), 1));
  std::vector<int32_t> leaves;
  for (int32_t b = 0; b < beams; ++b) {
    int32_t fork = chain.back();  // below the prompt's tail, or at a random depth of an earlier beam
    if (b > 0 && std::bernoulli_distribution(0.7)(rng)) {
      fork = leaves[at(draw(rng, 0, b - 1))];
      for (int32_t up = draw(rng, 1, tail); up > 0 && fork != chain.back(); --up) fork = t.node(fork).parent;
    }
    const int32_t depth = t.node(fork).depth - t.node(chain.back()).depth;
    int32_t n = fork;
    for (int32_t k = depth; k < tail; ++k) n = t.add_child(n, 1, 0.0);
    if (n == fork) n = t.add_child(n, 1, 0.0);  // every beam has its own leaf
    leaves.push_back(n);
  }
  std::vector<int32_t> perm(at(t.size()));
  for (int32_t i = 0; i < t.size(); ++i) perm[at(i)] = i;
  if (shuffle) std::shuffle(perm.begin(), perm.end(), rng);
  for (int32_t i = 0; i < t.size(); ++i) t.node(i).slot = perm[at(i)];
  return ancestor_csr(ancestor_mask_build(t, leaves, t.size()));
}

TreeAttentionIn cascade_inputs(std::mt19937_64& rng, const TwinPoint& pt) {
  const int32_t beams = pt.variant == 2 ? 40 : draw(rng, 2, 15);
  const int32_t prompt = draw(rng, 40, pt.on_host() && beams == 40 ? 160 : 700);  // the double twins' time, not the kernel's, grows with it
  AncestorCsr csr = trie_lists(rng, prompt, beams, draw(rng, 1, 90), pt.variant == 1);
  const int32_t slots = *std::max_element(csr.slot_ids.begin(), csr.slot_ids.end()) + 1;  // every node's slot: the leaves' lists hold them all
  TreeAttentionIn in = attention_inputs(rng, std::move(csr), dim(pt, 0), dim(pt, 1), dim(pt, 2), slots + 3);
  std::vector<float> unused;
  in.cascade = tree_attention_cascade_build(in.host_args(unused), tree_attention_cascade_tile_rows(dim(pt, 2)), draw(rng, 1, 400));
  return in;
}

[[maybe_unused]] const bool cascade = twin_register(TwinSpec<TreeAttentionIn, TreeAttentionOut>{
    .name = "tree_attention with a cascade over trie segments",
    .kernel = "cuda/tree_attention.cu",
    .tags = "[cuda][tree_attention]",
    // 30: scalar staging. (A head group larger than the tile gets no
    // cascade: test_tree_attention.cpp's structure tests.)
    .shapes = {{4, 4, 32}, {8, 2, 64}, {32, 8, 64}, {16, 2, 128}, {8, 1, 256}, {6, 2, 48}, {3, 1, 16}, {64, 4, 64}, {12, 1, 30}},
    .host_variants = 3,
    .device_variants = 3,
    .inputs = cascade_inputs,
    .cpu = attention_twin,
    .host_twin =
        [](const TreeAttentionIn& in, int32_t) {
          TreeAttentionOut o;
          std::vector<float> unused;
          if (in.cascade.items > 0) tree_attention_cascade_ref(in.host_args(unused), o.out);  // none: compare fails on items
          return o;
        },
    .device = tree_attention_on_device,
    .compare =
        [](const TwinPoint& pt, const TreeAttentionIn& in, const TreeAttentionOut& want, const TreeAttentionOut& got) {
          CAPTURE(in.cascade.items, in.cascade.members, in.cascade.private_max_row);
          REQUIRE(in.cascade.items > 0);  // the prompt (>= 40 slots) is a segment every beam reads
          attention_compare(in, want, got, pt.on_host() ? 1e-12 : 1e-4);
        },
});

}  // namespace
}  // namespace triescope::testing
