// The ancestor mask: query node q may read KV slot s iff the node stored in s
// is an ancestor-or-self of q; q's position id is its depth. One builder for
// every decoder (trie paper Algorithm 3 is the case "queries = the b leaves").
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/common/device_handles.h"
#include "core/mask/bit_mask.h"
#include "core/tree/token_tree.h"

namespace triescope {

// Full build: walks each query's ancestor chain. [queries.size() x num_slots].
BitMask ancestor_mask_build(const TokenTree& tree, const std::vector<int32_t>& queries, int32_t num_slots);

// Position ids of the queries: their depths.
std::vector<int32_t> position_ids(const TokenTree& tree, const std::vector<int32_t>& queries);

// What a decoder needs from whoever builds its per-step mask rows: the
// reference below, or a device builder (cuda/incremental_ancestor_mask.h),
// installed through DecodeOptions::make_mask so a trace records the rows the
// backend actually built.
class MaskRowBuilder {
 public:
  virtual ~MaskRowBuilder() = default;
  virtual void reset(int32_t capacity_slots = 64) = 0;
  virtual BitMask extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) = 0;
  virtual void retain(const std::vector<int32_t>& nodes) = 0;
  // Whether extend_on_device may be called: the rows are built on a device
  // and can stay there for a model of the same backend.
  virtual bool builds_on_device() const { return false; }
  // extend, with the rows left on the device, unread and unchecked (their
  // status rides on to whoever reads the step's results). This base, which
  // builds on the host, refuses with an Error.
  virtual DeviceMask extend_on_device(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots);
};

// Incremental builder. Keeps one row per "open" node (a node that may still
// get children: the frontier). A new node's row is its parent's row plus its
// own slot bit, so a step costs O(new rows x row words), independent of depth.
// A parent whose row is not held (after a GC, or a node never opened) falls
// back to the ancestor walk; `fallback_rows()` counts those.
class IncrementalAncestorMask final : public MaskRowBuilder {
 public:
  // Forgets everything; `capacity_slots` is a hint for the row width.
  void reset(int32_t capacity_slots = 64) override;
  // Appends rows for `nodes` (parents before children; slots must be set).
  // Returns the mask rows of `nodes` over `num_slots` columns.
  BitMask extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) override;
  // Keeps only the rows of `nodes` (the next step's possible parents).
  void retain(const std::vector<int32_t>& nodes) override;
  int64_t fallback_rows() const { return fallback_rows_; }
  int32_t held_rows() const { return static_cast<int32_t>(rows_.size()); }

 private:
  void widen(int32_t num_slots);
  int32_t words_ = 0;                                          // words per held row
  std::unordered_map<int32_t, std::vector<uint64_t>> rows_;  // node id -> [words_]
  int64_t fallback_rows_ = 0;
};

}  // namespace triescope
