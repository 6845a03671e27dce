#include "core/decode/tree_step.h"

#include "core/common/error.h"
#include "core/trace/forward_record.h"

namespace triescope {

StepInput tree_step_input(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots,
                          MaskRowBuilder* inc, bool mask_on_device) {
  StepInput in;
  in.tokens.reserve(nodes.size());
  for (int32_t id : nodes) {
    const TreeNode& n = tree.node(id);
    in.tokens.push_back(n.token);
    in.positions.push_back(n.depth);
    in.slots.push_back(n.slot);
  }
  in.num_slots = num_slots;
  if (mask_on_device) {
    TS_CHECK(inc != nullptr, "tree step: mask rows on a device need a mask builder");
    in.mask_device = inc->extend_on_device(tree, nodes, num_slots);
  } else {
    in.mask = inc ? inc->extend(tree, nodes, num_slots) : ancestor_mask_build(tree, nodes, num_slots);
  }
  return in;
}

nlohmann::json tree_step_json(const std::vector<int32_t>& nodes, const StepInput& in) {
  return ForwardView{nodes, in.positions, in.slots, in.mask}.to_json();
}

int32_t argmax_row(const float* row, int32_t vocab) {
  int32_t best = 0;
  for (int32_t v = 1; v < vocab; ++v)
    if (row[v] > row[best]) best = v;
  return best;
}

}  // namespace triescope
