// cuda::tree_attention against its CPU twin tree_attention_ref (double) on
// random trees: outputs poisoned first; fp32 tolerance
// |kernel - twin| <= 1e-4 * max(1, |twin|) per element (the kernel runs an
// online softmax in fp32 with a different summation order; 1e-4 is the
// transformer tests' logits tolerance). Needs a device (own main exits 77).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/mask/ancestor_mask.h"
#include "core/model/tree_attention.h"
#include "core/model/tree_attention_cascade.h"
#include "cuda/tree_attention.cuh"
#include "device_util.h"
#include "test_util.h"
#include "trie_layout.h"

using namespace triescope;
using namespace triescope::testing;

namespace {
struct Shape {
  int32_t heads, kv_heads, head_dim;
};

double worst_excess(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;  // max of |got - want| / max(1, |want|); NaN (poison) counts as failure
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::fabs(want[i]));
    worst = std::isnan(e) ? 1e30 : std::max(worst, e);
  }
  return worst;
}

// Runs kernel and twin on the same host data; returns the worst scaled error.
// With a cascade table the kernel runs the cascade (uploaded as is); the
// twin stays tree_attention_ref, the definition.
double run_both(const TreeAttentionArgs& host, const std::vector<float>& qv, const std::vector<float>& kv, const AncestorCsr& csr,
                cuda::KernelStatus* status_out = nullptr, const TreeAttentionCascadeTable* cascade = nullptr) {
  auto d_table = upload(cascade ? cascade->table : std::vector<int32_t>());
  auto d_q = upload(qv);
  auto d_kv = upload(kv);
  auto d_ptr = upload(csr.indptr);
  auto d_ids = upload(csr.slot_ids);
  const size_t n_out = static_cast<size_t>(host.num_queries) * host.heads * host.head_dim;
  auto d_out = poisoned<float>(n_out);
  auto d_status = fresh_status();
  TreeAttentionArgs a = host;
  a.q = d_q.data();
  a.kv = d_kv.data();
  a.indptr = d_ptr.data();
  a.slot_ids = d_ids.data();
  a.out = d_out.data();
  a.status = reinterpret_cast<int32_t*>(d_status.data());
  if (cascade) a.cascade = cascade->view(d_table.data());
  const size_t ws = cuda::tree_attention_workspace_bytes(a);
  cuda::DeviceBuffer<unsigned char> d_ws(std::max<size_t>(ws, 1), "test workspace");
  TS_CUDA_CHECK(cudaMemset(d_ws.data(), kPoisonByte, d_ws.bytes()), "poison workspace");
  a.workspace = d_ws.data();
  a.workspace_bytes = ws;
  cuda::tree_attention(a);
  const std::vector<float> got = download(d_out, n_out);
  const cuda::KernelStatus st = read_status(d_status);
  if (status_out) {
    *status_out = st;
    return 0.0;
  }
  CHECK(st.code == 0);
  std::vector<double> want;
  tree_attention_ref(host, want);
  return worst_excess(got, want);
}

// A trie step: a prompt chain of `prompt` slots, then `beams` branches that
// share random stretches below it (each a chain forking off an earlier
// branch or the prompt's tail), each beam `tail` tokens deep; one query per
// beam leaf. Slots are node ids, or a shuffled permutation when `shuffle`.
struct TrieLists {
  AncestorCsr csr;
  int32_t slots = 0;
};
TrieLists trie_lists(std::mt19937_64& rng, int32_t prompt, int32_t beams, int32_t tail, bool shuffle) {
  TokenTree t;
  const auto chain = t.add_chain(kNoNode, std::vector<int32_t>(static_cast<size_t>(prompt), 1));
  std::vector<int32_t> leaves;
  for (int32_t b = 0; b < beams; ++b) {
    // Fork below the prompt's tail or at a random depth of an earlier beam.
    int32_t at = chain.back();
    if (b > 0 && std::bernoulli_distribution(0.7)(rng)) {
      at = leaves[static_cast<size_t>(std::uniform_int_distribution<int32_t>(0, b - 1)(rng))];
      for (int32_t up = std::uniform_int_distribution<int32_t>(1, tail)(rng); up > 0 && at != chain.back(); --up) at = t.node(at).parent;
    }
    const int32_t depth = t.node(at).depth - t.node(chain.back()).depth;
    int32_t n = at;
    for (int32_t k = depth; k < tail; ++k) n = t.add_child(n, 1, 0.0);
    if (n == at) n = t.add_child(n, 1, 0.0);  // every beam has its own leaf
    leaves.push_back(n);
  }
  TrieLists l;
  l.slots = t.size();
  std::vector<int32_t> perm(static_cast<size_t>(l.slots));
  for (int32_t i = 0; i < l.slots; ++i) perm[static_cast<size_t>(i)] = i;
  if (shuffle) std::shuffle(perm.begin(), perm.end(), rng);
  for (int32_t i = 0; i < l.slots; ++i) t.node(i).slot = perm[static_cast<size_t>(i)];
  l.csr = ancestor_csr(ancestor_mask_build(t, leaves, l.slots));
  return l;
}
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

TEST_CASE("cuda tree_attention equals the CPU twin on random trees", "[cuda][tree_attention]") {
  const Shape sh = GENERATE(Shape{4, 4, 32}, Shape{8, 2, 64}, Shape{32, 8, 64}, Shape{16, 2, 128}, Shape{8, 1, 256}, Shape{6, 2, 48},
                            Shape{5, 5, 80}, Shape{64, 4, 64}, Shape{12, 1, 100}, Shape{3, 1, 16});
  const int32_t variant = GENERATE(0, 1, 2, 3);  // 3: long shared prompt (the lists split across blocks)
#ifdef TRIESCOPE_CUDA_HOST_RUNTIME
  // Host runtime profile: the 6000-node split lists (variant 3) for the
  // shapes up to 400 values per query (4 of 10; 1-8 s each there).
  if (variant == 3 && sh.heads * sh.head_dim > 400) return;
#endif
  const uint64_t seed = test_seed(static_cast<uint64_t>(sh.heads * 1000 + sh.head_dim) * 8 + static_cast<uint64_t>(variant));
  CAPTURE(sh.heads, sh.kv_heads, sh.head_dim, variant, seed);
  std::mt19937_64 rng(seed);
  const int32_t nodes = variant == 3 ? 6000 : std::uniform_int_distribution<int32_t>(1, 900)(rng);
  const int32_t num_slots = nodes + std::uniform_int_distribution<int32_t>(0, 40)(rng);
  TokenTree t;
  if (variant == 3) {  // a prompt chain of 5000, then 1000 nodes branching under its tail
    std::vector<int32_t> toks(5000, 1);
    const auto chain = t.add_chain(kNoNode, toks);
    for (int32_t i = 5000; i < nodes; ++i)
      t.add_child(std::bernoulli_distribution(0.2)(rng) ? chain.back() : std::uniform_int_distribution<int32_t>(4990, i - 1)(rng), 1, 0.0);
    for (int32_t i = 0; i < nodes; ++i) t.node(i).slot = i;
  } else {
    t = random_forest(rng, nodes, std::uniform_int_distribution<int32_t>(1, 4)(rng), num_slots, 0.05, false);
  }
  std::vector<int32_t> queries(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 40)(rng)));
  for (auto& q : queries) q = std::uniform_int_distribution<int32_t>(0, nodes - 1)(rng);
  const BitMask mask = ancestor_mask_build(t, queries, num_slots);
  AncestorCsr csr = ancestor_csr(mask);
  if (variant == 1 && csr.indptr.size() > 2) {  // an empty list: the kernel and the twin both give zeros
    const int32_t cut = csr.indptr[1];
    csr.slot_ids.erase(csr.slot_ids.begin(), csr.slot_ids.begin() + cut);
    for (size_t k = 1; k < csr.indptr.size(); ++k) csr.indptr[k] -= cut;
  }
  const int32_t capacity = num_slots + std::uniform_int_distribution<int32_t>(0, 9)(rng);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> qv(queries.size() * static_cast<size_t>(sh.heads * sh.head_dim)), kv(static_cast<size_t>(2) * capacity * sh.kv_heads * sh.head_dim);
  for (auto& x : qv) x = n(rng);
  for (auto& x : kv) x = n(rng);
  TreeAttentionArgs a;
  a.num_queries = static_cast<int32_t>(queries.size());
  a.heads = sh.heads;
  a.kv_heads = sh.kv_heads;
  a.head_dim = sh.head_dim;
  a.capacity = capacity;
  a.max_row = csr.max_row;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.head_dim)));
  a.q = qv.data();
  a.kv = kv.data();
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  std::vector<float> unused(qv.size());
  a.out = unused.data();
  CAPTURE(queries.size(), csr.max_row, cuda::tree_attention_plan(a, 132).splits);
  CHECK(run_both(a, qv, kv, csr) <= 1e-4);
}

TEST_CASE("cuda tree_attention reports a slot outside the cache through KernelStatus", "[cuda][tree_attention]") {
  std::vector<float> qv(3 * 4 * 32, 0.5f), kv(2 * 10 * 2 * 32, 0.25f);
  AncestorCsr csr;
  csr.indptr = {0, 2, 5, 6};
  csr.slot_ids = {0, 1, 0, 10, 2, 3};  // query 1 reads slot 10 of a 10-slot cache
  csr.max_row = 3;
  TreeAttentionArgs a;
  a.num_queries = 3;
  a.heads = 4;
  a.kv_heads = 2;
  a.head_dim = 32;
  a.capacity = 10;
  a.max_row = 3;
  a.scale = 0.25f;
  cuda::KernelStatus st;
  run_both(a, qv, kv, csr, &st);
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::slot_out_of_range));
  CHECK(st.a == 1);
  CHECK(st.b == 10);
}

TEST_CASE("cuda tree_attention with a cascade over trie segments equals the CPU twin; the cascade twin equals it too", "[cuda][tree_attention]") {
  const Shape sh = GENERATE(Shape{4, 4, 32}, Shape{8, 2, 64}, Shape{32, 8, 64}, Shape{16, 2, 128}, Shape{8, 1, 256}, Shape{6, 2, 48},
                            Shape{3, 1, 16}, Shape{64, 4, 64}, Shape{12, 1, 30}, Shape{40, 2, 256});  // 30: scalar staging; 40/2 > 16 rows
  const int32_t variant = GENERATE(0, 1, 2);  // 1: slots shuffled; 2: many beams (several tiles per segment)
  const uint64_t seed = test_seed(static_cast<uint64_t>(sh.heads * 1000 + sh.head_dim) * 8 + static_cast<uint64_t>(variant) + 77);
  CAPTURE(sh.heads, sh.kv_heads, sh.head_dim, variant, seed);
  std::mt19937_64 rng(seed);
  const int32_t prompt = std::uniform_int_distribution<int32_t>(40, 700)(rng);
  const int32_t beams = variant == 2 ? 40 : std::uniform_int_distribution<int32_t>(2, 15)(rng);
  const TrieLists tl = trie_lists(rng, prompt, beams, std::uniform_int_distribution<int32_t>(1, 90)(rng), variant == 1);
  const int32_t capacity = tl.slots + 3;
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> qv(static_cast<size_t>(beams) * sh.heads * sh.head_dim), kv(static_cast<size_t>(2) * capacity * sh.kv_heads * sh.head_dim);
  for (auto& x : qv) x = n(rng);
  for (auto& x : kv) x = n(rng);
  std::vector<float> unused(qv.size());
  TreeAttentionArgs a;
  a.num_queries = beams;
  a.heads = sh.heads;
  a.kv_heads = sh.kv_heads;
  a.head_dim = sh.head_dim;
  a.capacity = capacity;
  a.max_row = tl.csr.max_row;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.head_dim)));
  a.q = qv.data();
  a.kv = kv.data();
  a.indptr = tl.csr.indptr.data();
  a.slot_ids = tl.csr.slot_ids.data();
  a.out = unused.data();
  const TreeAttentionCascadeTable table =
      tree_attention_cascade_build(a, tree_attention_cascade_tile_rows(sh.head_dim), std::uniform_int_distribution<int32_t>(1, 400)(rng));
  CAPTURE(prompt, beams, table.items, table.members, table.private_max_row);
  if (sh.heads / sh.kv_heads > tree_attention_cascade_tile_rows(sh.head_dim)) {
    CHECK(table.items == 0);  // a head group larger than the kernel's tile: no cascade
    return;
  }
  REQUIRE(table.items > 0);  // the prompt (>= 40 slots) is a segment every beam reads
  CHECK(cascade_twin_error(a, table) <= 1e-12);  // the decomposition is exact
  CHECK(run_both(a, qv, kv, tl.csr, nullptr, &table) <= 1e-4);
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

TEST_CASE("tree_attention_cascade_build: no cascade for a causal prefill, the batch layout, one query or an out-of-range slot", "[cuda][tree_attention]") {
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
