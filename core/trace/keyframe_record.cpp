#include "core/trace/keyframe_record.h"

#include <climits>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/node_record.h"
#include "core/trace/record_fields.h"

namespace triescope {

KeyframeRecord KeyframeRecord::from_tree(int32_t step, const TokenTree& tree, int32_t num_slots) {
  KeyframeRecord k;
  k.step = step;
  k.nodes = tree.nodes();
  k.slot_to_node.assign(static_cast<size_t>(num_slots), kNoNode);
  for (const TreeNode& n : tree.nodes())
    if (n.slot >= 0 && n.slot < num_slots) k.slot_to_node[static_cast<size_t>(n.slot)] = n.id;
  return k;
}

nlohmann::json KeyframeRecord::to_json() const {
  nlohmann::json nj = nlohmann::json::array();
  for (const TreeNode& n : nodes) nj.push_back(trace_node(n));
  return {{"kind", "keyframe"}, {"step", step}, {kKeyframeNodes, std::move(nj)}, {kKeyframeSlotToNode, slot_to_node}};
}

KeyframeRecord KeyframeRecord::from_json(const nlohmann::json& j, const std::string& where) {
  const RecordFields f(j, where + ": keyframe");  // "<where>: keyframe must be an object", "<where>: keyframe: field step ..."
  KeyframeRecord k;
  k.step = f.int32("step");
  TS_CHECK(j.contains(kKeyframeNodes) && j[kKeyframeNodes].is_array(), where << ": keyframe field " << kKeyframeNodes << " must be an array");
  const nlohmann::json& nodes = j[kKeyframeNodes];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string at_node = where + ": " + kKeyframeNodes + "[" + std::to_string(i) + "]";
    trace_node_put(k.nodes, trace_node_parse(nodes[i], at_node), at_node);
  }
  const auto s2n = j.find(kKeyframeSlotToNode);
  TS_CHECK(s2n != j.end() && s2n->is_array(), where << ": keyframe field " << kKeyframeSlotToNode << " must be an array");
  k.slot_to_node.reserve(s2n->size());
  for (size_t s = 0; s < s2n->size(); ++s) {
    const auto id = json_int_in((*s2n)[s], kNoNode, INT32_MAX);
    TS_CHECK(id, where << ": keyframe field " << kKeyframeSlotToNode << "[" << s << "] must be a node id or -1, got " << json_brief((*s2n)[s]));
    k.slot_to_node.push_back(static_cast<int32_t>(*id));
  }
  return k;
}

}  // namespace triescope
