// A forward pass as a trace records it: a step's `forward` (the target's
// pass), `draft_forward` and each entry of `draft_forwards` (the draft
// model's) (docs/trace-format.md, "Step phases and fields"; $defs/forward_pass
// in docs/trace-format.schema.json). Its field names are written and read
// here only (ctest trace_field_literals).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mask/bit_mask.h"

namespace triescope {

struct ForwardView {
  std::vector<int32_t> queries;    // node ids (empty, and left out of the record, for layouts without a tree)
  std::vector<int32_t> positions;  // [queries]
  std::vector<int32_t> slots;      // [queries]
  BitMask mask;                    // [queries x cols]

  // The pass's object: {queries, positions, slots, mask}.
  nlohmann::json to_json() const;
};

// A recorded pass into `out`, whose buffers it reuses (ForwardView's
// from_json). `where` names the field in errors.
void forward_view_parse(const nlohmann::json& f, const std::string& where, ForwardView& out);

// How many positions (queries fed) a recorded pass holds, read without
// decoding its mask: what the recorder's totals count (0 when none).
size_t forward_record_positions(const nlohmann::json& f);

// The pass's field names, for the readers that follow a path `trace_diff`
// reports ("forward.queries[3]") back to its record.
inline constexpr const char* kForwardQueries = "queries";
inline constexpr const char* kForwardPositions = "positions";
inline constexpr const char* kForwardSlots = "slots";
inline constexpr const char* kForwardMask = "mask";

// The step record's fields that hold passes.
inline constexpr const char* kForwardField = "forward";             // the target's pass at the end of the step
inline constexpr const char* kDraftForwardField = "draft_forward";    // the draft model's pass (a prefill)
inline constexpr const char* kDraftForwardsField = "draft_forwards";  // the draft model's passes (a draft step)

}  // namespace triescope
