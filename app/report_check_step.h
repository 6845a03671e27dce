// One step of a `check --html` report: for each pass with violations, the
// tree around each faulty query, the recorded mask beside what the rule
// asks for (every wrong cell marked), position ids, the KV layout the pass
// read and the step's raw records. The wrong cells are mask_check's own
// findings for the pass (mask_check_tree / mask_check_copies): the rule's
// row is the recorded row with those cells flipped, never rebuilt here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/analysis/mask_check.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

// `listed`: the violations of `step` the report lists (mask_check_trace's first --max).
std::string check_step_html(const TraceReplay& t, int32_t step, const std::vector<const MaskViolation*>& listed);

}  // namespace triescope::cli
