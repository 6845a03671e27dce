#include "core/model/model.h"

#include <algorithm>
#include <string>

#include "core/common/error.h"

namespace triescope {

void step_input_check(const StepInput& in, int32_t vocab_size) {
  const size_t q = in.tokens.size();
  TS_CHECK(in.positions.size() == q && in.slots.size() == q, "step input: tokens/positions/slots sizes differ ("
                                                                 << q << ", " << in.positions.size() << ", "
                                                                 << in.slots.size() << ")");
  if (in.mask_device.rows) {  // the rows stayed on the device: only their width can be checked here
    TS_CHECK(in.mask.rows == 0 && in.mask_device.words_per_row == BitMask::words_for(in.num_slots),
             "step input: a device mask of " << in.mask_device.words_per_row << " words a row (expected " << BitMask::words_for(in.num_slots)
                                             << ") with " << in.mask.rows << " host rows (expected none)");
    TS_CHECK(in.logits_may_stay_on_device, "step input: a device mask needs logits_may_stay_on_device (its status rides with the selection)");
  } else {
    TS_CHECK(in.mask.rows == static_cast<int32_t>(q) && in.mask.cols == in.num_slots,
             "step input: mask is " << in.mask.rows << " x " << in.mask.cols << ", expected " << q << " x " << in.num_slots);
  }
  for (size_t i = 0; i < q; ++i) {
    TS_CHECK(in.tokens[i] >= 0 && in.tokens[i] < vocab_size,
             "step input: tokens[" << i << "] = " << in.tokens[i] << " outside vocabulary [0, " << vocab_size << ")");
    TS_CHECK(in.slots[i] >= 0 && in.slots[i] < in.num_slots,
             "step input: slots[" << i << "] = " << in.slots[i] << " outside [0, " << in.num_slots << ")");
    TS_CHECK(in.positions[i] >= 0, "step input: positions[" << i << "] = " << in.positions[i] << " is negative");
  }
  TS_CHECK(in.shared_prefix_slots >= 0 && in.shared_prefix_slots <= in.num_slots,
           "step input: shared_prefix_slots " << in.shared_prefix_slots << " outside [0, " << in.num_slots << "]");
  for (int32_t r = 0; r < in.mask.rows && in.shared_prefix_slots > 0; ++r)
    for (int32_t s = 0; s < in.shared_prefix_slots; ++s)
      TS_CHECK(in.mask.test(r, s), "step input: shared_prefix_slots says every row reads slot " << s << ", row " << r << " does not");
  for (size_t i = 0; i < in.logits_rows.size(); ++i)
    TS_CHECK(in.logits_rows[i] >= (i ? in.logits_rows[i - 1] + 1 : 0) && in.logits_rows[i] < static_cast<int32_t>(q),
             "step input: logits_rows[" << i << "] = " << in.logits_rows[i] << ": the list must rise strictly within [0, " << q << ")");
}

size_t Logits::host_offset(int32_t r) const {
  const size_t off = static_cast<size_t>(r) * static_cast<size_t>(vocab);
  TS_CHECK(r >= 0 && r < rows && off + static_cast<size_t>(vocab) <= data.size(),
           "logits row " << r << " read on the host: "
                         << (device.rows && data.empty() ? "the rows stayed on the device (StepInput::logits_may_stay_on_device)"
                                                         : "out of range (" + std::to_string(rows) + " rows)"));
  return off;
}

void logits_keep_rows(const StepInput& in, Logits& out) {
  const int32_t q = static_cast<int32_t>(in.tokens.size()), keep = static_cast<int32_t>(in.logits_rows.size());
  if (keep == 0 || out.rows == keep) return;  // every query, or already only the listed ones
  TS_CHECK(out.rows == q, "model output: " << out.rows << " logits rows for " << q << " queries (" << keep << " listed)");
  const size_t V = static_cast<size_t>(out.vocab);
  for (int32_t r = 0; r < keep; ++r)  // rows only move down (the list rises)
    std::copy_n(out.row(in.logits_rows[static_cast<size_t>(r)]), V, out.row(r));
  out.rows = keep;
  out.data.resize(static_cast<size_t>(keep) * V);
  out.device = {};  // the device rows are no longer these
}

void SlotTokenCache::write(const StepInput& in) {
  if (tokens.size() < static_cast<size_t>(in.num_slots)) {
    tokens.resize(static_cast<size_t>(in.num_slots), -1);
    positions.resize(static_cast<size_t>(in.num_slots), -1);
  }
  for (size_t i = 0; i < in.tokens.size(); ++i) {
    tokens[static_cast<size_t>(in.slots[i])] = in.tokens[i];
    positions[static_cast<size_t>(in.slots[i])] = in.positions[i];
  }
}

bool SlotTokenCache::context(const StepInput& in, int32_t r, std::vector<int32_t>& ctx) const {
  const int32_t p = in.positions[static_cast<size_t>(r)];
  ctx.assign(static_cast<size_t>(p) + 1, -1);
  bool exact = true;
  for (int32_t s = 0; s < in.num_slots; ++s) {
    if (!in.mask.test(r, s)) continue;
    const int32_t pos = positions[static_cast<size_t>(s)];
    if (pos < 0 || pos > p || ctx[static_cast<size_t>(pos)] != -1) {
      exact = false;
      continue;
    }
    ctx[static_cast<size_t>(pos)] = tokens[static_cast<size_t>(s)];
  }
  return exact && std::find(ctx.begin(), ctx.end(), -1) == ctx.end();
}

void SlotTokenCache::compact(const CompactionPlan& plan) {
  if (tokens.size() < static_cast<size_t>(plan.old_num_slots)) {
    tokens.resize(static_cast<size_t>(plan.old_num_slots), -1);
    positions.resize(static_cast<size_t>(plan.old_num_slots), -1);
  }
  compaction_apply(plan, tokens, 1);
  compaction_apply(plan, positions, 1);
}

}  // namespace triescope
