// The summary's counters against the records they count: a trace that lost
// a gc record freeing nothing, or was cut at a record boundary, replays
// without an error, and only the summary can tell. The recorder writes
// last_step, model_calls, computed_tokens, gc_runs, peak_slots and
// final_slots from the records it wrote (core/trace/trace_recorder.h);
// `check` recounts them while it replays every step and compares.
#pragma once
#include <string>
#include <vector>

#include "core/trace/trace_recorder.h"
#include "core/trace/trace_replay.h"

namespace triescope {

// Adds one replayed step to `t` the way the recorder counts its record: a
// target forward pass is a model call of positions.size() tokens; kv.peak
// (else kv.slots) raises the peak, kv.slots is the final count.
void recorded_totals_add_step(const StepView& v, RecordedTotals& t);

// One line per disagreement, naming the file and the field: a missing
// summary, or a counter the summary has that the records do not give
// (counters a summary leaves out, as version 1 traces do, are not checked).
// `counted`: every step added with recorded_totals_add_step; its gc_runs is
// taken from the trace's index here.
std::vector<std::string> summary_check(const TraceReplay& t, RecordedTotals counted);

}  // namespace triescope
