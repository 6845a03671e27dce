// The kernels' own error reports, on hand-made inputs: a kernel flags what
// its input gets wrong in its KernelStatus. The comparisons of every kernel
// with its CPU twin on random inputs are twin cases (twin_cases_kernels.cpp,
// run by test_twin_cases.cpp).
#include <catch2/catch.hpp>

#include "core/mask/bit_mask.h"
#include "device_util.h"
#include "twin_kernels.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("cuda ancestor_mask_build flags a slot outside the mask", "[cuda][mask]") {
  MaskBuildIn in;
  const auto chain = in.tree.add_chain(kNoNode, {1, 2, 3});
  in.tree.node(chain[0]).slot = 0;
  in.tree.node(chain[1]).slot = 1;
  in.tree.node(chain[2]).slot = 9;  // the mask has 4 columns
  in.queries = {chain[2]};
  in.num_slots = 4;
  const auto st = mask_build_on_device(in).status;
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::slot_out_of_range));
  CHECK(st.b == 9);
}

TEST_CASE("cuda kv_compact flags a source slot outside the old cache", "[cuda][kv]") {
  KvCompactIn in;
  in.plan.old_num_slots = 8;
  in.plan.src = {0, 8, 1};
  in.row_bytes = 4;
  in.cache.assign(8 * 4 + 16, 7);
  const auto st = kv_compact_on_device(in).status;
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::src_out_of_range));
  CHECK(st.a == 1);
  CHECK(st.b == 8);
}

TEST_CASE("cuda synthetic_logits reports a query that reads an empty slot", "[cuda][model]") {
  SyntheticLogitsIn in;
  in.cfg.vocab_size = 8;
  in.kv_tokens = {3, -1, 5};
  in.kv_positions = {0, 1, 2};
  in.query_positions = {2};
  in.mask = BitMask(1, 3);
  in.mask.set(0, 0);
  in.mask.set(0, 1);
  const auto st = synthetic_logits_on_device(in).status;
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::empty_slot));
  CHECK(st.b == 1);
}
