// The device twin of core's IncrementalAncestorMask (same reset / extend /
// retain contract, same results): held rows live in a device table, a step's
// new rows are built by ancestor_mask_extend (one parallel copy per new row)
// and copied back as the BitMask the step's trace records, or left on the
// device for a model of this backend (extend_on_device).
// Plain C++ header: no CUDA types.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/mask/ancestor_mask.h"
#include "core/mask/bit_mask.h"
#include "core/tree/token_tree.h"
#include "cuda/mask_row_planner.h"

namespace triescope::cuda {

class IncrementalAncestorMask final : public MaskRowBuilder {
 public:
  IncrementalAncestorMask();
  ~IncrementalAncestorMask() override;
  IncrementalAncestorMask(const IncrementalAncestorMask&) = delete;
  IncrementalAncestorMask& operator=(const IncrementalAncestorMask&) = delete;

  // Forgets everything; `capacity_slots` is a hint for the row width.
  void reset(int32_t capacity_slots = 64) override;
  // Builds rows for `nodes` (parents before children; slots set) on the
  // device and returns them over `num_slots` columns, copied back.
  BitMask extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) override;
  bool builds_on_device() const override { return true; }
  // extend, with the rows left in device memory (valid until the next extend
  // or reset), ready after DeviceMask::ready; nothing is read back, and the
  // kernel's status stays unread for the step's selector.
  DeviceMask extend_on_device(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) override;
  // Keeps only the rows of `nodes` (the next step's possible parents).
  void retain(const std::vector<int32_t>& nodes) override { planner_.retain(nodes); }
  // Parents whose row was not held: their row was walked on the host.
  int64_t fallback_rows() const { return planner_.fallback_rows(); }
  int32_t held_rows() const { return planner_.held_rows(); }

 private:
  struct Device;
  void resize_table(int32_t rows, int32_t words);
  bool enqueue_extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots, int32_t words_per_row);
  std::unique_ptr<Device> dev_;
  MaskRowPlanner planner_;
  int32_t dev_rows_ = 0;   // device table shape
  int32_t dev_words_ = 0;
};

}  // namespace triescope::cuda
