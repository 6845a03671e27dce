// The `keyframe` record: the whole tree and slot_to_node after a step, so a
// reader can start there (docs/trace-format.md, "keyframe"; $defs/keyframe in
// docs/trace-format.schema.json). Its field names are written and read here
// only (ctest trace_field_literals).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tree/token_tree.h"

namespace triescope {

struct KeyframeRecord {
  int32_t step = 0;
  std::vector<TreeNode> nodes;        // [nodes] index = node id
  std::vector<int32_t> slot_to_node;  // [num_slots] the node in each slot, -1 for a free slot

  // The tree after `step`, over `num_slots` slots.
  static KeyframeRecord from_tree(int32_t step, const TokenTree& tree, int32_t num_slots);
  // The whole record, with its kind.
  nlohmann::json to_json() const;
  // A recorded keyframe; `where` ("t.jsonl:9") names it in errors. Node ids
  // are dense from 0, each defined once.
  static KeyframeRecord from_json(const nlohmann::json& j, const std::string& where);
};

// The keyframe's field names, for the readers that follow a path
// `trace_diff` reports ("slot_to_node[4]") back to its record.
inline constexpr const char* kKeyframeNodes = "nodes";
inline constexpr const char* kKeyframeSlotToNode = "slot_to_node";

}  // namespace triescope
