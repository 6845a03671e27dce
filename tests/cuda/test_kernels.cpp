// The kernels' own error reports, on hand-made inputs: a kernel flags what
// its input gets wrong in its KernelStatus. The comparisons of every kernel
// with its CPU twin on random inputs are twin cases (twin_cases_kernels.cpp,
// run by test_twin_cases.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "core/mask/bit_mask.h"
#include "cuda/cuda_synthetic_model.h"
#include "cuda/synthetic_logits.cuh"
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

// A captured decode forward (cuda/cuda_synthetic_model.cpp) launches the
// synthetic model's kernels shaped for a bucket of queries and the cache's
// capacity, with the live counts in device memory (maybe_sizes): the live
// rows must equal the exact launch's bit for bit, the padded queries must
// write nothing (no K/V, no logits row), and a slot past the live count is
// still refused.
TEST_CASE("cuda synthetic model kernels shaped for a padded bucket read their live sizes from device memory", "[cuda][model]") {
  SyntheticLogitsIn in;
  in.cfg.vocab_size = 300;
  in.cfg.eos_token = 7;
  in.cfg.eos_per_million = 500000;
  in.cfg.seed = 99;
  const int32_t live_slots = 70, live_q = 5, cap_slots = 128, bucket = 8;
  for (int32_t s = 0; s < live_slots; ++s) {
    in.kv_tokens.push_back((s * 37) % 300);
    in.kv_positions.push_back(s / 3);
  }
  in.mask = BitMask(live_q, live_slots);
  for (int32_t q = 0; q < live_q; ++q) {
    in.query_positions.push_back(20 + q);
    for (int32_t s = 0; s < live_slots; ++s)
      if ((s * 7 + q) % 3 == 0) in.mask.set(q, s);
  }
  const SyntheticLogitsOut want = synthetic_logits_on_device(in);
  REQUIRE(want.status.code == 0);

  std::vector<int32_t> tokens(cap_slots, -1), positions(cap_slots, -1);
  std::copy(in.kv_tokens.begin(), in.kv_tokens.end(), tokens.begin());
  std::copy(in.kv_positions.begin(), in.kv_positions.end(), positions.begin());
  const int32_t pitch = BitMask::words_for(cap_slots);
  std::vector<uint64_t> mask(static_cast<size_t>(bucket * pitch), 0);
  for (int32_t q = 0; q < live_q; ++q)
    for (int32_t w = 0; w < in.mask.words_per_row; ++w) mask[static_cast<size_t>(q * pitch + w)] = in.mask.words[static_cast<size_t>(q * in.mask.words_per_row + w)];
  std::vector<int32_t> qpos(bucket, 0);
  std::copy(in.query_positions.begin(), in.query_positions.end(), qpos.begin());
  auto d_tok = upload(tokens), d_pos = upload(positions), d_qpos = upload(qpos);
  auto d_mask = upload(mask);
  auto d_sizes = upload(std::vector<int32_t>{live_q, live_slots});
  const size_t cells = static_cast<size_t>(bucket) * 300;
  auto d_logits = poisoned<float>(cells);
  auto d_status = fresh_status();
  cuda::SyntheticLogitsParams p;
  p.cfg = in.cfg;
  p.kv_tokens = d_tok.data();
  p.kv_positions = d_pos.data();
  p.num_slots = cap_slots;
  p.mask = d_mask.data();
  p.words_per_row = pitch;
  p.query_positions = d_qpos.data();
  p.num_queries = bucket;
  p.maybe_out_logits = d_logits.data();
  p.maybe_sizes = d_sizes.data();
  p.maybe_status = d_status.data();
  cuda::synthetic_logits(p, nullptr);
  const std::vector<float> got = download(d_logits, cells);
  CHECK(read_status(d_status).code == 0);
  const auto live_cells = static_cast<size_t>(live_q) * 300;
  CHECK(std::vector<float>(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(live_cells)) == want.logits);
  const std::vector<float> untouched = download(poisoned<float>(cells - live_cells), cells - live_cells);
  CHECK(std::memcmp(got.data() + live_cells, untouched.data(), untouched.size() * sizeof(float)) == 0);

  // A mask bit at live slot 75 (inside the capacity, past the live count) is refused.
  mask[1] |= uint64_t{1} << (75 - 64);
  auto d_bad = upload(mask);
  p.mask = d_bad.data();
  cuda::synthetic_logits(p, nullptr);
  const cuda::KernelStatus st = read_status(d_status);
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::slot_out_of_range));
  CHECK(st.b == 75);

  // The K/V write: padded queries (slot values past the live count) write nothing.
  std::vector<int32_t> ints = {1, 2, 3, 99, 99, 99, 99, 99};  // tokens; queries 3.. are padding
  auto d_wtok = upload(ints), d_wpos = upload(ints), d_wslot = upload(std::vector<int32_t>{0, 1, 2, 500, 500, 500, 500, 500});
  auto d_kv_tok = upload(std::vector<int32_t>(cap_slots, -1)), d_kv_pos = upload(std::vector<int32_t>(cap_slots, -1));
  auto d_wsizes = upload(std::vector<int32_t>{3, 10});
  auto d_wstatus = fresh_status();
  cuda::SyntheticKvWriteParams w;
  w.tokens = d_wtok.data();
  w.positions = d_wpos.data();
  w.slots = d_wslot.data();
  w.num_queries = bucket;
  w.kv_tokens = d_kv_tok.data();
  w.kv_positions = d_kv_pos.data();
  w.num_slots = cap_slots;
  w.maybe_sizes = d_wsizes.data();
  w.maybe_status = d_wstatus.data();
  cuda::synthetic_kv_write(w, nullptr);
  CHECK(read_status(d_wstatus).code == 0);  // slot 500 of the padding is never looked at
  const std::vector<int32_t> kv = download(d_kv_tok, cap_slots);
  CHECK(std::vector<int32_t>(kv.begin(), kv.begin() + 4) == std::vector<int32_t>{1, 2, 3, -1});
  CHECK(std::count(kv.begin(), kv.end(), -1) == cap_slots - 3);
}
