#include "app/divergence_focus.h"

#include "core/trace/forward_record.h"
#include "core/trace/keyframe_record.h"

namespace triescope::cli {

namespace {
int32_t int_member(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int32_t>() : -1;
}
int32_t int_element(const nlohmann::json& pass, const char* arr, int32_t i) {
  if (i < 0 || !pass.is_object() || !pass.contains(arr) || !pass[arr].is_array() || static_cast<size_t>(i) >= pass[arr].size()) return -1;
  const nlohmann::json& e = pass[arr][static_cast<size_t>(i)];
  return e.is_number_integer() ? e.get<int32_t>() : -1;
}
}  // namespace

const nlohmann::json* divergence_pass(const nlohmann::json& record, const std::string& pass) {
  if (pass.empty() || !record.is_object()) return nullptr;
  const std::string passes = std::string(kDraftForwardsField) + "[";
  if (pass.rfind(passes, 0) == 0) {
    const size_t i = std::stoul(pass.substr(passes.size()));
    const auto it = record.find(kDraftForwardsField);
    if (it == record.end() || !it->is_array() || i >= it->size()) return nullptr;
    return &(*it)[i];
  }
  return record.contains(pass) ? &record[pass] : nullptr;
}

DivergenceFocus divergence_focus(const TraceDivergence& d, const nlohmann::json& record) {
  DivergenceFocus f;
  const auto& p = d.path;
  size_t k = 0;  // where the path goes on inside the pass
  if (!p.empty() && (p[0].key == kForwardField || p[0].key == kDraftForwardField)) {
    f.pass = p[0].key;
    k = 1;
  } else if (p.size() >= 2 && p[0].key == kDraftForwardsField && p[1].index >= 0) {
    f.pass = std::string(kDraftForwardsField) + "[" + std::to_string(p[1].index) + "]";
    k = 2;
  }
  if (const nlohmann::json* pass = divergence_pass(record, f.pass)) {
    // {mask}{rows}[r] (a bit: d.index), or {queries|positions|slots}[r].
    if (k + 2 < p.size() && p[k].key == kForwardMask && p[k + 1].key == "rows" && p[k + 2].index >= 0) {
      f.row = static_cast<int32_t>(p[k + 2].index);
      f.col = static_cast<int32_t>(d.index);
    } else if (k + 1 < p.size() && (p[k].key == kForwardQueries || p[k].key == kForwardPositions || p[k].key == kForwardSlots) &&
               p[k + 1].index >= 0) {
      f.row = static_cast<int32_t>(p[k + 1].index);
    }
    f.node = int_element(*pass, kForwardQueries, f.row);
    f.slot = f.col >= 0 ? f.col : int_element(*pass, kForwardSlots, f.row);
    return f;
  }
  // Elsewhere (added[i], status[i], chosen[i], verify...drafts[j]...): the
  // deepest object on the path that names a node ("id" in a node entry,
  // "node" in the others) and a slot.
  const nlohmann::json* at = &record;
  for (const TracePathStep& s : p) {
    if (s.index >= 0) {
      if (!at->is_array() || static_cast<size_t>(s.index) >= at->size()) break;
      at = &(*at)[static_cast<size_t>(s.index)];
    } else {
      if (!at->is_object() || !at->contains(s.key)) break;
      at = &(*at)[s.key];
    }
    if (!at->is_object()) continue;
    const int32_t node = at->contains("id") && at->contains("parent") ? int_member(*at, "id") : int_member(*at, "node");
    if (node >= 0) f.node = node;
    if (int_member(*at, "slot") >= 0) f.slot = int_member(*at, "slot");
  }
  if (f.slot < 0 && p.size() == 2 && p[0].key == kKeyframeSlotToNode && p[1].index >= 0) f.slot = static_cast<int32_t>(p[1].index);
  return f;
}

}  // namespace triescope::cli
