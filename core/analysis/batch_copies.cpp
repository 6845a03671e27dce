#include "core/analysis/batch_copies.h"

#include <string>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

namespace {

// One step record's chosen beams applied to the copies (batch_beam_search.cpp,
// BatchSearch::reorder): beam j = copy from_beam + token; copies past the
// chosen ones keep their rows.
void apply_chosen(const nlohmann::json& record, const std::string& where, std::vector<std::vector<int32_t>>& copies) {
  if (!record.contains("chosen")) return;
  const nlohmann::json& chosen = record["chosen"];
  TS_CHECK(chosen.is_array(), where << ": chosen must be an array, got " << json_brief(chosen));
  std::vector<std::vector<int32_t>> next = copies;
  const int64_t n = static_cast<int64_t>(copies.size());
  for (size_t i = 0; i < chosen.size(); ++i) {
    TS_CHECK(chosen[i].is_object(), where << ": chosen[" << i << "] must be an object, got " << json_brief(chosen[i]));
    JsonObjectReader c(chosen[i], where, "chosen[" + std::to_string(i) + "]");
    const int64_t beam = c.get_int("beam", 0, n - 1);
    const int64_t from = c.get_int("from_beam", 0, n - 1);
    const int64_t token = c.get_int("token", 0, INT32_MAX);
    next[static_cast<size_t>(beam)] = copies[static_cast<size_t>(from)];
    next[static_cast<size_t>(beam)].push_back(static_cast<int32_t>(token));
  }
  copies = std::move(next);
}

}  // namespace

std::vector<std::vector<int32_t>> batch_copy_tokens(const TraceReplay& t, int32_t step) {
  if (!mask_copy_layout(t)) return {};
  JsonObjectReader cfg = t.header_record().config_reader(t.origin());
  const std::vector<int32_t> prompt = cfg.get_int_array("prompt", 0, INT32_MAX);
  const int64_t beams = cfg.object("beam").get_int("num_beams", 1, kTraceMaxSlots);
  std::vector<std::vector<int32_t>> copies(static_cast<size_t>(beams), prompt);
  for (int32_t s : t.steps()) {
    if (s > step) break;
    if (s == 0) continue;  // the prefill chooses nothing
    for (const nlohmann::json& r : t.records_of_step(s))
      if (r.value("kind", std::string()) == "step") apply_chosen(r, t.origin() + ": step " + std::to_string(s), copies);
  }
  return copies;
}

}  // namespace triescope
