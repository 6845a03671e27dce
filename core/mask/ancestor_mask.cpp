#include "core/mask/ancestor_mask.h"

#include <algorithm>
#include <cstring>

#include "core/common/error.h"

namespace triescope {

namespace {
void set_ancestor_bits(const TokenTree& tree, int32_t q, int32_t num_slots, uint64_t* row) {
  for (int32_t n = q; n != kNoNode; n = tree.node(n).parent) {
    const int32_t s = tree.node(n).slot;
    if (s == kNoSlot) continue;
    TS_CHECK(s >= 0 && s < num_slots, "ancestor mask: node " << n << " holds slot " << s << " outside [0, "
                                                               << num_slots << ")");
    row[s >> 6] |= uint64_t{1} << (s & 63);
  }
}
}  // namespace

BitMask ancestor_mask_build(const TokenTree& tree, const std::vector<int32_t>& queries, int32_t num_slots) {
  BitMask m(static_cast<int32_t>(queries.size()), num_slots);
  for (size_t i = 0; i < queries.size(); ++i) set_ancestor_bits(tree, queries[i], num_slots, m.row(static_cast<int32_t>(i)));
  return m;
}

std::vector<int32_t> position_ids(const TokenTree& tree, const std::vector<int32_t>& queries) {
  std::vector<int32_t> p(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) p[i] = tree.node(queries[i]).depth;
  return p;
}

void IncrementalAncestorMask::reset(int32_t capacity_slots) {
  rows_.clear();
  words_ = BitMask::words_for(std::max(capacity_slots, 64));
  fallback_rows_ = 0;
}

void IncrementalAncestorMask::widen(int32_t num_slots) {
  const int32_t need = BitMask::words_for(num_slots);
  if (need <= words_) return;
  const int32_t grown = std::max(need, words_ * 2);  // amortised doubling
  for (auto& [id, row] : rows_) row.resize(static_cast<size_t>(grown), 0);
  words_ = grown;
}

DeviceMask MaskRowBuilder::extend_on_device(const TokenTree&, const std::vector<int32_t>&, int32_t) {
  TS_FAIL("mask builder: builds its rows on the host (builds_on_device() is false), so none can stay on a device");
}

BitMask IncrementalAncestorMask::extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) {
  widen(num_slots);
  BitMask out(static_cast<int32_t>(nodes.size()), num_slots);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const TreeNode& n = tree.node(nodes[i]);
    std::vector<uint64_t> row(static_cast<size_t>(words_), 0);
    auto parent_row = n.parent == kNoNode ? rows_.end() : rows_.find(n.parent);
    if (n.parent == kNoNode) {
      // a root: only itself
    } else if (parent_row != rows_.end()) {
      std::memcpy(row.data(), parent_row->second.data(), row.size() * sizeof(uint64_t));
    } else {
      ++fallback_rows_;
      set_ancestor_bits(tree, n.parent, num_slots, row.data());
    }
    if (n.slot != kNoSlot) {
      TS_CHECK(n.slot >= 0 && n.slot < num_slots, "ancestor mask: node " << n.id << " slot " << n.slot
                                                                          << " outside [0, " << num_slots << ")");
      row[static_cast<size_t>(n.slot >> 6)] |= uint64_t{1} << (n.slot & 63);
    }
    std::memcpy(out.row(static_cast<int32_t>(i)), row.data(), static_cast<size_t>(out.words_per_row) * sizeof(uint64_t));
    rows_[n.id] = std::move(row);
  }
  return out;
}

void IncrementalAncestorMask::retain(const std::vector<int32_t>& nodes) {
  std::unordered_map<int32_t, std::vector<uint64_t>> kept;
  kept.reserve(nodes.size());
  for (int32_t id : nodes) {
    auto it = rows_.find(id);
    if (it != rows_.end()) kept.emplace(id, std::move(it->second));
  }
  rows_ = std::move(kept);
}

}  // namespace triescope
