// What a divergence of `triescope diff` is about, for the reports: the pass
// it is in, the mask row and column, the node and the KV slot, read from the
// divergence's field path and trace A's record. The GUI's diff marks
// (gui/trace_context.cpp, computeMarks) read paths the same way; both belong
// in core/trace one day (docs/ci.md says so).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/trace/trace_diff.h"

namespace triescope::cli {

struct DivergenceFocus {
  std::string pass;   // "forward", "draft_forward", "draft_forwards[i]"; "" when not in a pass
  int32_t row = -1;   // the pass's row (query), -1
  int32_t col = -1;   // the mask column (KV slot) of a differing bit, -1
  int32_t node = -1;  // the node it concerns, -1 when none
  int32_t slot = -1;  // a KV slot it concerns, -1
};

// `record`: the divergent record of trace A (the diff's records[d.record]).
DivergenceFocus divergence_focus(const TraceDivergence& d, const nlohmann::json& record);

// The pass named by focus.pass in `record` (null when absent).
const nlohmann::json* divergence_pass(const nlohmann::json& record, const std::string& pass);

}  // namespace triescope::cli
