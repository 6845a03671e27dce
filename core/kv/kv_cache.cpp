#include "core/kv/kv_cache.h"

#include "core/common/error.h"

namespace triescope {

CompactionPlan kv_collect_garbage(TokenTree& tree, const std::vector<int32_t>& live, int32_t num_slots) {
  std::vector<int32_t> slot_owner(static_cast<size_t>(num_slots), kNoNode);
  for (const TreeNode& n : tree.nodes()) {
    if (n.slot == kNoSlot) continue;
    TS_CHECK(n.slot >= 0 && n.slot < num_slots, "kv gc: node " << n.id << " holds slot " << n.slot
                                                               << " outside [0, " << num_slots << ")");
    TS_CHECK(slot_owner[static_cast<size_t>(n.slot)] == kNoNode,
             "kv gc: slot " << n.slot << " owned by nodes " << slot_owner[static_cast<size_t>(n.slot)] << " and " << n.id);
    slot_owner[static_cast<size_t>(n.slot)] = n.id;
  }
  std::vector<char> keep(static_cast<size_t>(num_slots), 0);
  for (int32_t id : live)
    for (int32_t n = id; n != kNoNode; n = tree.node(n).parent) {
      const int32_t s = tree.node(n).slot;
      if (s == kNoSlot) continue;
      if (keep[static_cast<size_t>(s)]) break;  // the rest of the chain is already kept
      keep[static_cast<size_t>(s)] = 1;
    }
  CompactionPlan plan;
  plan.old_num_slots = num_slots;
  std::vector<int32_t> remap(static_cast<size_t>(num_slots), kNoSlot);
  for (int32_t s = 0; s < num_slots; ++s)
    if (keep[static_cast<size_t>(s)]) {
      remap[static_cast<size_t>(s)] = plan.new_num_slots();
      plan.src.push_back(s);
    }
  for (int32_t s = 0; s < num_slots; ++s) {
    const int32_t owner = slot_owner[static_cast<size_t>(s)];
    if (owner != kNoNode) tree.node(owner).slot = remap[static_cast<size_t>(s)];
  }
  return plan;
}

}  // namespace triescope
