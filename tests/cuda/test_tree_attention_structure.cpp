// The structure of cuda::tree_attention's cascade, counted by the host
// runtime (launch_stats()): the launches of one call, their blocks and the
// barrier rounds of each block. A trie step of b beams below a P-slot prompt
// must attend the prompt with ceil(P / chunk) x KV-heads item blocks (not b x
// that: the per-beam kernel's b x KV-heads blocks each read all of P), the
// private lists with a few blocks per (beam, KV head), and merge
// once per (beam, head). The output is checked against the CPU twin too, so
// the counts belong to a kernel that does the work. Host runtime only (label
// cuda_emu).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "core/model/tree_attention.h"
#include "core/model/tree_attention_cascade.h"
#include "cuda/tree_attention.cuh"
#include "device_util.h"
#include "test_util.h"
#include "trie_layout.h"
#include "launch_stats_util.h"
#include "triescope_cuda_host/control.h"

using namespace triescope;
namespace host = triescope::cuda_host;
using triescope::testing::launches_of;

TEST_CASE("tree_attention cascade structure: prompt chunks once per KV head, private lists unsplit, one merge", "[cuda][tree_attention]") {
  const int32_t P = 1024, t = 64, heads = 32, kv_heads = 8, hd = 64;
  const int32_t b = GENERATE(3, 15);
  const bool cascade = GENERATE(true, false);
  CAPTURE(b, cascade);
  const AncestorCsr csr = testing::trie_layout_csr(P, b, t);
  const int32_t capacity = P + b * t;
  std::mt19937_64 rng(testing::test_seed(static_cast<uint64_t>(b) * 2 + cascade));
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> qv(static_cast<size_t>(b) * heads * hd), kv(static_cast<size_t>(2) * capacity * kv_heads * hd);
  for (auto& x : qv) x = n(rng);
  for (auto& x : kv) x = n(rng);
  TreeAttentionArgs a;
  a.num_queries = b;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = hd;
  a.capacity = capacity;
  a.max_row = csr.max_row;
  a.scale = 0.125f;
  a.q = qv.data();
  a.kv = kv.data();
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  std::vector<float> host_out(qv.size());
  a.out = host_out.data();
  std::vector<double> want;
  tree_attention_ref(a, want);
  const TreeAttentionCascadeTable table =
      cascade ? tree_attention_cascade_build(a, tree_attention_cascade_tile_rows(hd), 4 * 132) : TreeAttentionCascadeTable{};
  REQUIRE((table.items > 0) == cascade);

  auto d_table = testing::upload(table.table);
  auto d_q = testing::upload(qv);
  auto d_kv = testing::upload(kv);
  auto d_ptr = testing::upload(csr.indptr);
  auto d_ids = testing::upload(csr.slot_ids);
  auto d_out = testing::poisoned<float>(qv.size());
  TreeAttentionArgs d = a;
  d.q = d_q.data();
  d.kv = d_kv.data();
  d.indptr = d_ptr.data();
  d.slot_ids = d_ids.data();
  d.out = d_out.data();
  if (cascade) d.cascade = table.view(d_table.data());
  d.workspace_bytes = cuda::tree_attention_workspace_bytes(d);
  cuda::DeviceBuffer<unsigned char> ws(std::max<size_t>(d.workspace_bytes, 1), "test workspace");
  d.workspace = ws.data();
  host::reset_launch_stats();
  cuda::tree_attention(d);
  TS_CUDA_CHECK(cudaDeviceSynchronize(), "test sync");
  const std::vector<host::LaunchStat> all = host::launch_stats();
  const auto per_query = launches_of("tree_attention_kernel");
  const auto items = launches_of("tree_attention_item_kernel");
  const auto merge = launches_of("tree_attention_merge_kernel");

  const std::vector<float> got = testing::download(d_out, qv.size());
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::fabs(want[i]));
    worst = std::isnan(e) ? 1e30 : std::max(worst, e);
  }
  CHECK(worst <= 1e-4);

  REQUIRE(per_query.size() == 1);
  const cuda::TreeAttentionPlan p = cuda::tree_attention_plan(d, 132);
  CHECK(per_query[0].barrier_rounds_max == 1);  // the warp merge
  if (cascade) {
    REQUIRE(all.size() == 3);
    REQUIRE(items.size() == 1);
    REQUIRE(merge.size() == 1);
    // The private lists (t = 64 slots each) split into chunks of 16 (4 per
    // warp): 4 blocks per beam and KV head, so more blocks are in flight.
    CHECK(p.splits == 4);
    CHECK(p.chunk == 16);
    CHECK(per_query[0].blocks == static_cast<uint64_t>(b * kv_heads * 4));
    // The prompt is one segment of all b beams (b x 4 query heads <= 64
    // rows: one tile), cut into chunks of 64 (1,024 x 8 KV heads / 528
    // target blocks = 16 slots, raised to 64): P / 64 x KV heads blocks,
    // whatever b is.
    CHECK(table.items == P / 64);
    CHECK(items[0].blocks == static_cast<uint64_t>(P / 64 * kv_heads));
    // Three barriers per 32-slot sub-tile (last round read; K and V staged
    // together; weights written): 2 sub-tiles per chunk.
    CHECK(items[0].barrier_rounds_max == 3 * 2);
    CHECK(items[0].barrier_rounds_total == static_cast<uint64_t>(3 * 2 * P / 64 * kv_heads));
    CHECK(merge[0].blocks == static_cast<uint64_t>(b * heads));
    // The merge: one barrier for the common max, two per batch of 128 parts
    // (4 private splits + 16 chunks: one batch), one to add the groups' sums.
    CHECK(merge[0].barrier_rounds_max == 1 + 2 + 1);
  } else {
    // The per-beam kernel: b x KV heads x splits blocks, each split reading
    // its slice of the whole list (the prompt once per beam).
    CHECK(items.empty());
    CHECK(per_query[0].blocks == static_cast<uint64_t>(b) * kv_heads * p.splits);
    CHECK(int64_t{p.splits} * p.chunk >= P + t);
    CHECK(merge.size() == (p.splits > 1 ? 1u : 0u));
  }
}
