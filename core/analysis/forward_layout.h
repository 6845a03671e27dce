// Trace analysis (no Qt): the KV layout a step's forward pass read, i.e. what
// node each column of its mask is. Normally the step's own slot_to_node. A
// version-1 lookahead trace recorded each pass's gc after the pass (in the
// same step), so the view after the step shows the compacted layout; there
// the pre-gc layout is rebuilt from the gc moves and the slots the queries
// wrote. `triescope inspect` and the GUI's mask pane both label columns with it.
#pragma once
#include <cstdint>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace_replay.h"

namespace triescope {

struct ForwardLayout {
  std::vector<int32_t> slot_to_node;  // [columns] the node in each slot the pass read, -1 if unknown
  std::vector<int32_t> slot_of_node;  // [nodes] its slot in that layout, -1
  bool before_gc = false;             // the layout before this step's gc (rebuilt), not the view's
  int32_t node_in_slot(int32_t slot) const;
  int32_t slot_of(int32_t node) const;
};

// Steps whose gc record follows their step record (version-1 lookahead).
std::set<int32_t> trace_gc_after_forward_steps(const std::vector<nlohmann::json>& records);

// The layout `v`'s forward pass read; `gc_after_forward`: v.step is one of
// trace_gc_after_forward_steps.
ForwardLayout forward_layout(const StepView& v, bool gc_after_forward);

}  // namespace triescope
