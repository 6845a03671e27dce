// A node as a trace records it: each entry of a step's `added` and of a
// keyframe's `nodes` (docs/trace-format.md, "Conventions"; $defs/node in
// docs/trace-format.schema.json). Its field names are written and read here
// only.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tree/token_tree.h"

namespace triescope {

// The node's object: id, parent, token, depth, slot, logprob, status.
nlohmann::json trace_node(const TreeNode& n);
// A recorded node; `where` names the entry in errors ("t.jsonl:3: added[2]").
TreeNode trace_node_parse(const nlohmann::json& j, const std::string& where);
// Appends `n` to `nodes`, whose next id it must take: node ids are dense and
// defined once (docs/trace-format.md). A second definition is refused, never
// applied: with another parent it would silently move the node.
void trace_node_put(std::vector<TreeNode>& nodes, const TreeNode& n, const std::string& where);

}  // namespace triescope
