// The `gc` record: a garbage collection at the start of a step, before its
// step record, as the compaction plan's [old, new] moves (docs/trace-format.md,
// "gc"; $defs/gc in docs/trace-format.schema.json). Its field names are
// written and read here only (ctest trace_field_literals).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/kv/kv_cache.h"

namespace triescope {

struct GcRecord {
  int32_t step = 0;
  int32_t slots_before = 0;  // slots before the collection, in [0, kTraceMaxSlots]
  int32_t slots_after = 0;   // and after it
  std::vector<std::pair<int32_t, int32_t>> moves;  // [old slot, new slot]: new takes old; slots not named are freed

  bool operator==(const GcRecord&) const = default;

  // The plan's moves (new slot i takes old slot plan.src[i]).
  static GcRecord from_plan(int32_t step, const CompactionPlan& plan);
  // The whole record, with its kind.
  nlohmann::json to_json() const;
  // A recorded gc record; `where` ("t.jsonl:4") names it in errors:
  // "t.jsonl:4: gc: field slots_before must be in [0, 16777216], got 2000000000".
  // Every move's slots lie in [0, slots_before).
  static GcRecord from_json(const nlohmann::json& j, const std::string& where);
};

// The gc record's field names, for the readers that follow a path
// `trace_diff` reports ("moves[2]") back to its record.
inline constexpr const char* kGcMoves = "moves";

}  // namespace triescope
