#include "core/trace/gc_record.h"

#include <climits>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/record_fields.h"
#include "core/trace/trace.h"

namespace triescope {

namespace {

constexpr const char* kSlotsBefore = "slots_before";
constexpr const char* kSlotsAfter = "slots_after";

int32_t slot_count(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  TS_CHECK(it != j.end() && it->is_number_integer(), where << ": gc: field " << key << " must be an integer");
  const auto x = json_int_in(*it, 0, kTraceMaxSlots);
  TS_CHECK(x, where << ": gc: field " << key << " must be in [0, " << kTraceMaxSlots << "], got " << json_brief(*it));
  return static_cast<int32_t>(*x);
}

}  // namespace

GcRecord GcRecord::from_plan(int32_t step, const CompactionPlan& plan) {
  GcRecord g;
  g.step = step;
  g.slots_before = plan.old_num_slots;
  g.slots_after = plan.new_num_slots();
  for (int32_t i = 0; i < plan.new_num_slots(); ++i) g.moves.emplace_back(plan.src[static_cast<size_t>(i)], i);
  return g;
}

nlohmann::json GcRecord::to_json() const {
  nlohmann::json mv = nlohmann::json::array();
  for (const auto& [o, n] : moves) mv.push_back({o, n});
  return {{"kind", "gc"}, {"step", step}, {kSlotsBefore, slots_before}, {kSlotsAfter, slots_after}, {kGcMoves, std::move(mv)}};
}

GcRecord GcRecord::from_json(const nlohmann::json& j, const std::string& where) {
  const RecordFields f(j, where + ": gc");  // "<where>: gc must be an object", "<where>: gc: field step ..."
  GcRecord g;
  g.step = f.int32("step");
  TS_CHECK(j.contains(kGcMoves) && j[kGcMoves].is_array(), where << ": gc field " << kGcMoves << " must be an array");
  g.slots_before = slot_count(j, kSlotsBefore, where);
  for (const auto& mv : j[kGcMoves]) {
    const bool pair = mv.is_array() && mv.size() == 2;
    const auto o = pair ? json_int_in(mv[0], 0, g.slots_before - 1) : std::nullopt;
    const auto n = pair ? json_int_in(mv[1], 0, g.slots_before - 1) : std::nullopt;
    TS_CHECK(o && n, where << ": gc " << kGcMoves << " entries must be [old, new] slots in [0, " << kSlotsBefore << " = " << g.slots_before
                           << "), got " << json_brief(mv));
    g.moves.emplace_back(static_cast<int32_t>(*o), static_cast<int32_t>(*n));
  }
  g.slots_after = slot_count(j, kSlotsAfter, where);
  return g;
}

}  // namespace triescope
