#include "cuda/mask_row_planner.h"

#include <algorithm>

#include "core/common/error.h"
#include "core/mask/bit_mask.h"

namespace triescope::cuda {

namespace {
int32_t even_words(int32_t slots) {
  const int32_t w = BitMask::words_for(std::max(slots, 64));
  return w + (w & 1);
}
}  // namespace

void MaskRowPlanner::reset(int32_t capacity_slots) {
  row_of_.clear();
  free_rows_.clear();
  release_after_.clear();
  table_rows_ = 0;
  table_words_ = even_words(capacity_slots);
  fallback_rows_ = 0;
}

int32_t MaskRowPlanner::take_row() {
  if (free_rows_.empty()) {
    const int32_t rows = std::max({table_rows_ + 1, table_rows_ * 2, 64});  // amortised doubling
    for (int32_t r = rows - 1; r >= table_rows_; --r) free_rows_.push_back(r);
    table_rows_ = rows;
  }
  const int32_t r = free_rows_.back();
  free_rows_.pop_back();
  return r;
}

MaskExtendPlan MaskRowPlanner::plan_extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) {
  if (BitMask::words_for(num_slots) > table_words_) table_words_ = std::max(even_words(num_slots), table_words_ * 2);
  const size_t n = nodes.size();
  MaskExtendPlan p;
  p.src_row.assign(n, -1);
  p.batch_parent.assign(n, -1);
  p.slot.assign(n, -1);
  p.dst_row.assign(n, -1);
  std::unordered_map<int32_t, int32_t> in_batch;  // node id -> index in `nodes`
  for (size_t i = 0; i < n; ++i) {
    const TreeNode& nd = tree.node(nodes[i]);
    TS_CHECK(nd.slot == kNoSlot || (nd.slot >= 0 && nd.slot < num_slots),
             "ancestor mask: node " << nd.id << " slot " << nd.slot << " outside [0, " << num_slots << ")");
    p.slot[i] = nd.slot;
    if (nd.parent != kNoNode) {
      if (auto b = in_batch.find(nd.parent); b != in_batch.end()) {
        p.batch_parent[i] = b->second;
        p.src_row[i] = p.src_row[static_cast<size_t>(b->second)];  // the same nearest ancestor outside the batch
      } else if (auto h = row_of_.find(nd.parent); h != row_of_.end()) {
        p.src_row[i] = h->second;
      } else {
        // As core's IncrementalAncestorMask: a parent with no held row is walked.
        ++fallback_rows_;
        std::vector<uint64_t> row(static_cast<size_t>(table_words_), 0);
        for (int32_t a = nd.parent; a != kNoNode; a = tree.node(a).parent) {
          const int32_t s = tree.node(a).slot;
          if (s == kNoSlot) continue;
          TS_CHECK(s >= 0 && s < num_slots, "ancestor mask: node " << a << " holds slot " << s << " outside [0, " << num_slots << ")");
          row[static_cast<size_t>(s >> 6)] |= uint64_t{1} << (s & 63);
        }
        const int32_t r = take_row();
        release_after_.push_back(r);
        p.src_row[i] = r;
        p.host_rows.emplace_back(r, std::move(row));
      }
    }
    in_batch[nd.id] = static_cast<int32_t>(i);
  }
  // Destination rows after every source is fixed: a fresh row is never a source.
  for (size_t i = 0; i < n; ++i) {
    p.dst_row[i] = take_row();
    auto [it, inserted] = row_of_.try_emplace(nodes[i], p.dst_row[i]);
    if (!inserted) {
      release_after_.push_back(it->second);  // a node extended again: its old row may still be a source
      it->second = p.dst_row[i];
    }
  }
  p.table_rows = table_rows_;
  p.table_words = table_words_;
  return p;
}

void MaskRowPlanner::finish_extend() {
  for (int32_t r : release_after_) free_rows_.push_back(r);
  release_after_.clear();
}

void MaskRowPlanner::retain(const std::vector<int32_t>& nodes) {
  std::unordered_map<int32_t, int32_t> kept;
  kept.reserve(nodes.size());
  for (int32_t id : nodes)
    if (auto it = row_of_.find(id); it != row_of_.end()) {
      kept.emplace(id, it->second);
      row_of_.erase(it);
    }
  for (auto& [id, r] : row_of_) free_rows_.push_back(r);
  row_of_ = std::move(kept);
}

}  // namespace triescope::cuda
