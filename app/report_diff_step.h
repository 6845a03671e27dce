// The step of a diff's first divergence, both traces side by side: the tree
// around the divergent node, the pass's masks with every differing cell
// marked (the divergences trace_diff_all finds in that record), position
// ids, the KV layouts and the step's raw records.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "app/divergence_focus.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

// `ra`, `rb`: the divergent record in A and in B.
std::string diff_step_html(const TraceReplay& a, const TraceReplay& b, const TraceDivergence& d, const DivergenceFocus& focus,
                           const nlohmann::json& ra, const nlohmann::json& rb, const TraceDiffOptions& opt);

}  // namespace triescope::cli
