// The cascade decomposition of a tree step's ancestor lists (the
// TreeAttentionCascade of tree_attention.h), built on the host once per step
// and shared by every layer, and its twin: the same decomposition computed in
// double, partial softmax states merged by the log-sum-exp rule, which must
// equal tree_attention_ref. cuda/tree_attention.cu runs the decomposition on
// the device (docs/cuda.md, "Tree attention").
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/tree_attention.h"

namespace triescope {

// A segment is attended apart from its queries' private lists only when it
// is at least this long (a shorter one costs an item for little reuse).
inline constexpr int32_t kCascadeMinSegment = 32;

// Query heads (members x heads per KV head) one device item holds for a head
// dim: the kernel's tile (cuda/tree_attention.cu checks it agrees).
int32_t tree_attention_cascade_tile_rows(int32_t head_dim);

// The table behind a TreeAttentionCascade: one int32 buffer (upload it as
// is) and where each array starts.
struct TreeAttentionCascadeTable {
  std::vector<int32_t> table;
  int32_t items = 0, members = 0, tile_rows = 0, private_max_row = 0;
  size_t item = 0, shared_slots = 0, member = 0, query_part_ptr = 0, query_parts = 0, private_ptr = 0, private_slots = 0;
  int64_t shared_slot_count = 0;   // slots of all segments (each once)
  int64_t item_slot_reads = 0;     // sum over items of their chunk's slots (a tile re-reads its chunk)
  int64_t private_slot_count = 0;  // sum of the private lists
  // The view over a copy of `table` starting at `base` (host or device).
  TreeAttentionCascade view(const int32_t* base) const;
};

// Cuts the lists of `a` (host indptr / slot_ids; a.cascade is ignored) into
// segments and private lists. Items hold at most `tile_rows` query heads;
// chunks are cut so that items x kv_heads is about `target_blocks` (default:
// 4 x 132 SMs, as tree_attention_plan aims for) with >= 64 slots each, a
// multiple of 32. No cascade (items == 0) when fewer than two queries share
// a segment of kCascadeMinSegment slots, when a group of heads exceeds
// tile_rows, when a slot is outside [0, capacity) (the kernel reports it),
// or when the lists are far from tree-like (partition refinement makes more
// than max(4 q + 64, listed slots / 8) reader sets, e.g. a long causal
// prefill, where every slot ends with its own readers).
TreeAttentionCascadeTable tree_attention_cascade_build(const TreeAttentionArgs& a, int32_t tile_rows, int32_t target_blocks = 528);

// The twin of the device's cascade: each item's chunk and each private list
// attended apart in double (running max, sum, weighted V), the parts of a
// query merged by the log-sum-exp rule. Checks first that each query's
// private list and items cover exactly its list (names the query). `out` is
// [num_queries x heads x head_dim]; a.out is ignored; a.cascade must be a
// host view with items > 0.
void tree_attention_cascade_ref(const TreeAttentionArgs& a, std::vector<double>& out);

}  // namespace triescope
