// The `summary` record: the last record of a trace, with the outputs best
// first, the metrics and the wall time (docs/trace-format.md, "summary";
// $defs/summary in docs/trace-format.schema.json). Its field names are
// written and read here only: the recorder writes a SummaryRecord, readers
// parse one (ctest trace_field_literals). The metrics the recorder owns are
// named in recorded_totals_each (core/trace/trace_recorder.h).
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace triescope {

struct SummaryRecord {
  nlohmann::json outputs = nlohmann::json::array();  // [outputs] best first: {"tokens": [...], "score", "sum_logprobs"} (open)
  nlohmann::json metrics = nlohmann::json::object();  // the recorder's figures and the algorithm's own (open)
  double seconds = 0;                                 // wall time, never compared (trace_diff)

  bool operator==(const SummaryRecord&) const = default;

  // The whole record, with its kind.
  nlohmann::json to_json() const;
  // A recorded summary; `where` ("t.jsonl:40") names it in errors:
  // "t.jsonl:40: summary: field metrics must be an object, got [1]". A field
  // left out reads as its default (an early writer's summary has only
  // outputs); a field of the wrong type is an error. Fields it does not know
  // are ignored.
  static SummaryRecord from_json(const nlohmann::json& j, const std::string& where);
};

// The summary's metrics object, for readers that name it in messages.
inline constexpr const char* kSummaryMetrics = "metrics";
// The wall-time field ("seconds"): of the summary, and of the metrics a
// decoder hands the recorder (which drops it there); trace_diff compares
// neither, nor any field of that name (core/trace/trace_diff.h).
inline constexpr const char* kSummarySeconds = "seconds";

}  // namespace triescope
