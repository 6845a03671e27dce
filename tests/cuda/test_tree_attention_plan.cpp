// The host half of cuda::tree_attention, checked on the CPU: how a launch
// cuts the work (tree_attention_plan). A CPU emulation of the kernel's
// decomposition against the double twin is a host twin in
// twin_cases_tree_attention.cpp.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/model/tree_attention.h"
#include "cuda/tree_attention.cuh"

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
