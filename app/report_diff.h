// `triescope diff --junit/--html`: the first divergence trace_diff found
// (never recomputed) as a JUnit test case (one for the pair of traces, a
// failure naming step, pass and node) and as an HTML page: both traces at
// that step side by side, the way the inspector's diff mode shows them.
#pragma once
#include <optional>
#include <string>

#include "app/report_junit.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

// "step 2 (expand), pass forward, row 1, node 5, slot 3: forward.mask.rows[1] bit 3: A = 1, B = 0"
std::string divergence_message(const TraceDivergence& d, const TraceReplay& a);

JunitCase diff_junit_case(const std::string& path_a, const std::string& path_b, const TraceReplay& a,
                          const std::optional<TraceDivergence>& first, double seconds, const std::string& text);

std::string diff_html(const std::string& path_a, const std::string& path_b, const TraceReplay& a, const TraceReplay& b,
                      const std::optional<TraceDivergence>& first, const TraceDiffOptions& opt);

}  // namespace triescope::cli
