// Contract checks every Model implementation must pass, shared by the test
// executables of the models (synthetic and scripted in tests/dsbd, the
// transformer in tests/torch). Header-only, Catch2 v2.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/mask/bit_mask.h"
#include "core/model/model.h"

namespace triescope::test {

// A step over the first `num_slots` slots where query i sits in slot
// `slots[i]` and reads the slots of `visible[i]`.
inline StepInput contract_step(std::vector<int32_t> tokens, std::vector<int32_t> positions, std::vector<int32_t> slots,
                               int32_t num_slots, const std::vector<std::vector<int32_t>>& visible) {
  StepInput in;
  in.tokens = std::move(tokens);
  in.positions = std::move(positions);
  in.slots = std::move(slots);
  in.num_slots = num_slots;
  in.mask = BitMask(static_cast<int32_t>(visible.size()), num_slots);
  for (size_t r = 0; r < visible.size(); ++r)
    for (int32_t c : visible[r]) in.mask.set(static_cast<int32_t>(r), c);
  return in;
}

// Models share one slot layout in DSBD (draft and target) and the draft never
// writes the last draft layer's slots, nor has anybody written a freshly
// sampled beam's slot when the next GC runs: a compaction plan may move slots
// the model never wrote. The check: a model writes slots 0 and 1 (a chain of
// two tokens), takes a plan over `old_num_slots` that keeps 0, 1 and moves the
// never-written slot `old_num_slots - 1` to slot 2, then reads slots 0 and 1
// again and must give the logits it gave before the move (within `tol`).
// Slot 2 is left as the moved empty slot for the caller to probe.
inline void check_compact_over_unwritten_slots(Model& m, int32_t old_num_slots, float tol) {
  REQUIRE(old_num_slots >= 3);
  CAPTURE(m.describe().dump(), old_num_slots);
  const StepInput in = contract_step({1, 2}, {0, 1}, {0, 1}, 2, {{0}, {0, 1}});
  Logits before, after;
  m.forward(in, before);
  CompactionPlan plan;
  plan.old_num_slots = old_num_slots;
  plan.src = {0, 1, old_num_slots - 1};
  REQUIRE_NOTHROW(m.compact(plan));
  const StepInput again = contract_step({1, 2}, {0, 1}, {0, 1}, 3, {{0}, {0, 1}});
  m.forward(again, after);
  REQUIRE(before.data.size() == after.data.size());
  float worst = 0.0f;
  for (size_t i = 0; i < before.data.size(); ++i) worst = std::max(worst, std::fabs(before.data[i] - after.data[i]));
  CHECK(worst <= tol);
}

}  // namespace triescope::test
