#include "core/analysis/forward_layout.h"

#include <algorithm>

namespace triescope {

int32_t ForwardLayout::node_in_slot(int32_t slot) const {
  return slot >= 0 && static_cast<size_t>(slot) < slot_to_node.size() ? slot_to_node[static_cast<size_t>(slot)] : kNoNode;
}

int32_t ForwardLayout::slot_of(int32_t node) const {
  return node >= 0 && static_cast<size_t>(node) < slot_of_node.size() ? slot_of_node[static_cast<size_t>(node)] : kNoSlot;
}

std::set<int32_t> trace_gc_after_forward_steps(const std::vector<nlohmann::json>& records) {
  std::set<int32_t> out;
  int64_t last_step_record = -1;
  for (const nlohmann::json& r : records) {
    if (!r.is_object() || !r.contains("step") || !r["step"].is_number_integer()) continue;
    const std::string kind = r.value("kind", std::string());
    const int64_t step = r["step"].get<int64_t>();
    if (kind == "step") last_step_record = step;
    else if (kind == "gc" && step == last_step_record) out.insert(static_cast<int32_t>(step));
  }
  return out;
}

ForwardLayout forward_layout(const StepView& v, bool gc_after_forward) {
  ForwardLayout out;
  if (!gc_after_forward || !v.forward || v.gc_slots_before < 0) {
    out.slot_to_node = v.slot_to_node;
  } else {
    // Before the gc, old slot `o` held what new slot `n` holds now (moves are
    // (old, new) for every kept slot); the queries wrote their own slots.
    out.before_gc = true;
    out.slot_to_node.assign(static_cast<size_t>(std::max(v.gc_slots_before, v.forward->mask.cols)), kNoNode);
    for (const auto& [o, n] : v.gc_moves)
      if (o >= 0 && static_cast<size_t>(o) < out.slot_to_node.size() && n >= 0 && static_cast<size_t>(n) < v.slot_to_node.size())
        out.slot_to_node[static_cast<size_t>(o)] = v.slot_to_node[static_cast<size_t>(n)];
    const ForwardView& f = *v.forward;
    for (size_t r = 0; r < f.queries.size() && r < f.slots.size(); ++r)
      if (f.slots[r] >= 0 && static_cast<size_t>(f.slots[r]) < out.slot_to_node.size())
        out.slot_to_node[static_cast<size_t>(f.slots[r])] = f.queries[r];
  }
  out.slot_of_node.assign(v.nodes.size(), kNoSlot);
  for (size_t s = 0; s < out.slot_to_node.size(); ++s) {
    const int32_t n = out.slot_to_node[s];
    if (n >= 0 && static_cast<size_t>(n) < out.slot_of_node.size()) out.slot_of_node[static_cast<size_t>(n)] = static_cast<int32_t>(s);
  }
  return out;
}

}  // namespace triescope
