// `triescope check --junit/--html`: the check's result (mask_check_trace's
// report, never recomputed) as a JUnit test case (one per trace, a failure
// per violation listed) and as an HTML page showing each violation the way
// the inspector shows it.
#pragma once
#include <string>

#include "app/report_junit.h"
#include "core/analysis/mask_check.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

// "step 3 (expand), pass forward, row 1, node 5, slot 2 (node 4): sees a sibling's slot: expected 0, found 1"
std::string violation_message(const MaskViolation& v);

// `text`: what the command printed (the test case's system-out).
JunitCase check_junit_case(const std::string& path, const TraceReplay& t, const MaskCheckReport& rep, double seconds,
                           const std::string& text);

std::string check_html(const std::string& path, const TraceReplay& t, const MaskCheckReport& rep);

}  // namespace triescope::cli
