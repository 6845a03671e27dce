// Host-side bookkeeping of cuda::IncrementalAncestorMask, kept free of CUDA
// so it is tested on the CPU (tests/cuda/test_cpu_twins.cpp executes its plans
// on a host table with ancestor_mask_extend's contract). It decides which
// table row each held node owns, where each new row is copied from, which
// rows must be walked on the host (parents with no held row, as in core's
// IncrementalAncestorMask) and how large the table must be.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/tree/token_tree.h"

namespace triescope::cuda {

// One extend step, in ancestor_mask_extend's terms.
struct MaskExtendPlan {
  int32_t table_rows = 0;   // table shape the launch needs; a resize keeps every row's words
  int32_t table_words = 0;  // even (16-byte row copies)
  std::vector<int32_t> src_row;       // [n] table row to copy, -1: none
  std::vector<int32_t> batch_parent;  // [n] index of the parent in this batch, -1: outside
  std::vector<int32_t> slot;          // [n] own slot, -1: none
  std::vector<int32_t> dst_row;       // [n] table row written
  // Rows walked on the host (parents with no held row): written into the
  // table before the launch. Each is [table_words] words.
  std::vector<std::pair<int32_t, std::vector<uint64_t>>> host_rows;
};

class MaskRowPlanner {
 public:
  void reset(int32_t capacity_slots);
  // Plans rows for `nodes` (parents before children) and records them as held.
  MaskExtendPlan plan_extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots);
  // After the launch: the host rows and the replaced rows of the last plan are free again.
  void finish_extend();
  void retain(const std::vector<int32_t>& nodes);
  int32_t table_rows() const { return table_rows_; }
  int32_t table_words() const { return table_words_; }
  int64_t fallback_rows() const { return fallback_rows_; }
  int32_t held_rows() const { return static_cast<int32_t>(row_of_.size()); }

 private:
  int32_t take_row();
  int32_t table_words_ = 2;
  int32_t table_rows_ = 0;
  std::vector<int32_t> free_rows_;
  std::vector<int32_t> release_after_;
  std::unordered_map<int32_t, int32_t> row_of_;  // node id -> table row
  int64_t fallback_rows_ = 0;
};

}  // namespace triescope::cuda
