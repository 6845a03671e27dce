// cuda::tree_attention's error report and the cascade's structure
// (tree_attention_cascade_build: which lists get a cascade, what it reads).
// The kernel against its CPU twin (random forests, long prompts, the
// decomposition, the cascade) is twin_cases_tree_attention.cpp. Needs a
// device (own main exits 77).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/mask/ancestor_mask.h"
#include "core/model/tree_attention.h"
#include "core/model/tree_attention_cascade.h"
#include "cuda/tree_attention.cuh"
#include "test_util.h"
#include "trie_layout.h"
#include "twin_kernels.h"

using namespace triescope;
using namespace triescope::testing;

namespace {
// The largest relative difference between the cascade twin over `table`
// and the definition (tree_attention_ref) on `a`.
double cascade_twin_error(const TreeAttentionArgs& a, const TreeAttentionCascadeTable& table) {
  TreeAttentionArgs h = a;
  h.cascade = table.view(table.table.data());
  std::vector<double> want, got;
  tree_attention_ref(a, want);
  tree_attention_cascade_ref(h, got);
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
  return worst;
}
}  // namespace

TEST_CASE("cuda tree_attention reports a slot outside the cache through KernelStatus", "[cuda][tree_attention]") {
  TreeAttentionIn in;
  in.q.assign(3 * 4 * 32, 0.5f);
  in.kv.assign(2 * 10 * 2 * 32, 0.25f);
  in.csr.indptr = {0, 2, 5, 6};
  in.csr.slot_ids = {0, 1, 0, 10, 2, 3};  // query 1 reads slot 10 of a 10-slot cache
  in.csr.max_row = 3;
  TreeAttentionArgs& a = in.shape;
  a.num_queries = 3;
  a.heads = 4;
  a.kv_heads = 2;
  a.head_dim = 32;
  a.capacity = 10;
  a.max_row = 3;
  a.scale = 0.25f;
  const cuda::KernelStatus st = tree_attention_on_device(in).status;
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::slot_out_of_range));
  CHECK(st.a == 1);
  CHECK(st.b == 10);
}

TEST_CASE("tree_attention_cascade_build: beams that fork off each other at 40 depths still share the prompt", "[cuda][tree_attention]") {
  // Beam b forks off beam b - 1 one level deeper than beam b - 1 forked:
  // query b's list crosses b + 1 segments, so partition refinement makes
  // about q^2 / 2 = 800 reader sets for 40 queries (a random trie of this
  // shape once hit the old bound of 4 q + 64 = 224 and lost its cascade).
  TokenTree t;
  const int32_t prompt = 491, beams = 40, tail = 90;
  const auto chain = t.add_chain(kNoNode, std::vector<int32_t>(static_cast<size_t>(prompt), 1));
  std::vector<int32_t> leaves, path;  // path: the previous beam's nodes below the prompt
  for (int32_t b = 0; b < beams; ++b) {
    int32_t n = b == 0 ? chain.back() : path[static_cast<size_t>(b - 1)];
    std::vector<int32_t> next(path.begin(), path.begin() + std::max(0, b));
    for (int32_t d = std::max(0, b); d < tail; ++d) next.push_back(n = t.add_child(n, 1, 0.0));
    leaves.push_back(n);
    path = next;
  }
  for (int32_t i = 0; i < t.size(); ++i) t.node(i).slot = i;
  const AncestorCsr csr = ancestor_csr(ancestor_mask_build(t, leaves, t.size()));
  TreeAttentionArgs a;
  a.num_queries = beams;
  a.heads = 16;
  a.kv_heads = 2;
  a.head_dim = 128;
  a.capacity = t.size();
  a.max_row = csr.max_row;
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  const TreeAttentionCascadeTable table = tree_attention_cascade_build(a, tree_attention_cascade_tile_rows(a.head_dim));
  REQUIRE(table.items > 0);
  CHECK(table.shared_slot_count >= prompt);  // the prompt is one segment all 40 read
  std::mt19937_64 rng(11);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> qv(static_cast<size_t>(beams) * a.heads * a.head_dim), kv(static_cast<size_t>(2) * a.capacity * a.kv_heads * a.head_dim), out(qv.size());
  for (auto& x : qv) x = n(rng);
  for (auto& x : kv) x = n(rng);
  a.scale = 0.125f;
  a.q = qv.data();
  a.kv = kv.data();
  a.out = out.data();
  CHECK(cascade_twin_error(a, table) <= 1e-12);
}

TEST_CASE("tree_attention_cascade_build: no cascade for a causal prefill, the batch layout, a head group wider than the tile, one query or an out-of-range slot",
          "[cuda][tree_attention]") {
  TreeAttentionArgs a;
  a.heads = 32;
  a.kv_heads = 8;
  a.head_dim = 64;
  AncestorCsr csr;
  csr.indptr = {0};
  for (int32_t r = 0; r < 500; ++r) {  // causal: query r reads [0, r]
    for (int32_t s = 0; s <= r; ++s) csr.slot_ids.push_back(s);
    csr.indptr.push_back(static_cast<int32_t>(csr.slot_ids.size()));
  }
  a.num_queries = 500;
  a.capacity = 500;
  a.max_row = 500;
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  CHECK(tree_attention_cascade_build(a, 64).items == 0);
  csr.indptr = {0, 100, 200, 300};  // batch: three disjoint lists
  csr.slot_ids.resize(300);
  for (int32_t s = 0; s < 300; ++s) csr.slot_ids[static_cast<size_t>(s)] = s;
  a.num_queries = 3;
  a.max_row = 100;
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  CHECK(tree_attention_cascade_build(a, 64).items == 0);
  csr.indptr = {0, 100, 200};  // two queries sharing 100 slots: one segment (two chunks)
  a.num_queries = 2;
  for (int32_t s = 0; s < 100; ++s) csr.slot_ids[static_cast<size_t>(100 + s)] = s;
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  const TreeAttentionCascadeTable t = tree_attention_cascade_build(a, 64);
  CHECK(t.items == 2);  // chunks of 64 and 36 slots, each with both queries
  CHECK(t.members == 4);
  CHECK(t.item_slot_reads == 100);
  CHECK(t.private_slot_count == 0);
  CHECK(t.shared_slot_count == 100);
  a.heads = 40;  // a head group of 20 query heads: more rows than the kernel's tile holds at head dim 256
  a.kv_heads = 2;
  a.head_dim = 256;
  CHECK(a.heads / a.kv_heads > tree_attention_cascade_tile_rows(a.head_dim));
  CHECK(tree_attention_cascade_build(a, tree_attention_cascade_tile_rows(a.head_dim)).items == 0);
  a.heads = 32;
  a.kv_heads = 8;
  a.head_dim = 64;
  a.num_queries = 1;
  CHECK(tree_attention_cascade_build(a, 64).items == 0);
  a.num_queries = 2;
  a.capacity = 100;
  CHECK(tree_attention_cascade_build(a, 64).items == 2);
  csr.slot_ids[150] = 100;  // slot 100 of a 100-slot cache: left to the kernel to report
  CHECK(tree_attention_cascade_build(a, 64).items == 0);
}

// The CPU proxy for the trie paper's point: at P = 8,192, b = 15, t = 64
// (bench_tree_attention's trie layout; 32 heads, 8 KV heads, d 64) the
// per-beam lists read 13.5x the unique K/V; the cascade's launches read
// within 1.15x of it. Host arithmetic from the plans only.
TEST_CASE("tree_attention plan K/V bytes: the cascade reads the trie's unique K/V once (P 8192, b 15, t 64)", "[cuda][tree_attention]") {
  const int32_t P = 8192, b = GENERATE(3, 9, 15), t = 64;
  CAPTURE(b);
  const AncestorCsr csr = testing::trie_layout_csr(P, b, t);
  TreeAttentionArgs a;
  a.num_queries = b;
  a.heads = 32;
  a.kv_heads = 8;
  a.head_dim = 64;
  a.capacity = P + b * t;
  a.max_row = P + t;
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  const double unique = static_cast<double>(P + b * t) * 2 * a.kv_heads * a.head_dim * sizeof(float);
  const int64_t listed = static_cast<int64_t>(csr.slot_ids.size());
  const double per_beam = cuda::tree_attention_kv_bytes(a, cuda::tree_attention_plan(a, 132), listed);
  const TreeAttentionCascadeTable table = tree_attention_cascade_build(a, tree_attention_cascade_tile_rows(a.head_dim), 4 * 132);
  a.cascade = table.view(table.table.data());
  const cuda::TreeAttentionPlan p = cuda::tree_attention_plan(a, 132);
  const double cascade = cuda::tree_attention_kv_bytes(a, p, listed);
  CAPTURE(per_beam / unique, cascade / unique, table.items, p.splits);
  CHECK(per_beam / unique > 0.9 * b);  // today: each beam re-reads the prompt (13.5x at b = 15)
  CHECK(cascade / unique <= 1.15);
  CHECK(cascade >= unique);  // every unique row is read at least once
  CHECK(table.members == table.items * b);  // one tile holds every beam (b x 4 heads <= 64 rows)
}
