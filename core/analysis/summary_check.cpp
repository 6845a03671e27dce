#include "core/analysis/summary_check.h"

#include <algorithm>
#include <sstream>

namespace triescope {

namespace {
int64_t kv_int(const json& kv, const char* key, int64_t fallback) {
  if (!kv.is_object()) return fallback;
  const auto it = kv.find(key);
  return it != kv.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}
}  // namespace

void recorded_totals_add_step(const StepView& v, RecordedTotals& t) {
  t.last_step = std::max(t.last_step, v.step);
  if (v.forward) {
    ++t.model_calls;
    t.computed_tokens += static_cast<int64_t>(v.forward->positions.size());
  }
  t.peak_slots = std::max(t.peak_slots, kv_int(v.kv, "peak", kv_int(v.kv, "slots", -1)));
  t.final_slots = kv_int(v.kv, "slots", t.final_slots);
}

std::vector<std::string> summary_check(const TraceReplay& t, RecordedTotals counted) {
  std::vector<std::string> out;
  const json* summary = t.summary();
  if (summary == nullptr) {
    out.push_back(t.origin() + ": no summary record after step " + std::to_string(t.last_step()) +
                  " (the trace ends early: cut short, or its writer did not finish)");
    return out;
  }
  counted.gc_runs = 0;
  for (size_t i = 0; i < t.index().size(); ++i) counted.gc_runs += t.index().kind(i) == TraceRecordKind::gc;
  const json metrics = summary->value("metrics", json::object());
  const std::pair<const char*, int64_t> fields[] = {
      {"last_step", counted.last_step},     {"model_calls", counted.model_calls}, {"computed_tokens", counted.computed_tokens},
      {"gc_runs", counted.gc_runs},         {"peak_slots", counted.peak_slots},   {"final_slots", counted.final_slots},
  };
  for (const auto& [name, records] : fields) {
    const auto it = metrics.find(name);
    if (it == metrics.end() || !it->is_number_integer()) continue;
    if (it->get<int64_t>() == records) continue;
    std::ostringstream m;
    m << t.origin() << ": summary metrics." << name << " = " << it->get<int64_t>() << ", but the records give " << records;
    out.push_back(m.str());
  }
  return out;
}

}  // namespace triescope
