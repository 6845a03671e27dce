// A step record's `kv` group: the KV cache's figures after the step
// (docs/trace-format.md, "Step phases and fields"; $defs/kv in
// docs/trace-format.schema.json). Its field names are written and read here
// only: writers build a KvRecord, readers parse one (ctest
// trace_field_literals).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace triescope {

struct KvRecord {
  int64_t slots = 0;  // slots in use after the step, in [0, kTraceMaxSlots]
  int64_t peak = 0;   // the most slots in use so far, in [0, kTraceMaxSlots]
  std::optional<int64_t> bytes{};           // the slots' K/V bytes
  std::optional<int64_t> batch_slots{};     // the comparison layout's slots (docs/trace-format.md), in [0, kTraceMaxSlots]
  std::optional<int64_t> batch_bytes{};     // and its bytes
  std::optional<int64_t> live_beams{};      // beams still growing
  std::optional<int64_t> live_samples{};    // multigen: samples still growing
  std::optional<int64_t> engine_cells{};    // a model whose cache lives in an engine (Model::engine_state): its occupied cells
  std::optional<int64_t> engine_seq_ids{};  // and the seq ids it uses

  bool operator==(const KvRecord&) const = default;

  // The `kv` object; optional figures are left out when unknown.
  nlohmann::json to_json() const;
  // A recorded `kv` object. Fields it does not know are ignored (as every
  // reader does); a missing or mistyped field is an Error naming `where`
  // and the field: "t.jsonl:2: kv: field slots must be in [0, 16777216], got 2000000000".
  static KvRecord from_json(const nlohmann::json& j, const std::string& where);
};

// The step record's field that holds the group.
inline constexpr const char* kKvField = "kv";

}  // namespace triescope
