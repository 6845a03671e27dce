#include "core/analysis/summary_check.h"

#include <algorithm>
#include <sstream>

namespace triescope {

void recorded_totals_add_step(const StepView& v, RecordedTotals& t) {
  t.last_step = std::max(t.last_step, v.step);
  if (v.forward) {
    ++t.model_calls;
    t.computed_tokens += static_cast<int64_t>(v.forward->positions.size());
  }
  if (const std::optional<KvRecord>& kv = v.kv) {
    t.peak_slots = std::max(t.peak_slots, kv->peak);
    t.final_slots = kv->slots;
  }
}

std::vector<std::string> summary_check(const TraceReplay& t, RecordedTotals counted) {
  std::vector<std::string> out;
  const std::optional<SummaryRecord> summary = t.summary_record();
  if (!summary) {
    out.push_back(t.origin() + ": no summary record after step " + std::to_string(t.last_step()) +
                  " (the trace ends early: cut short, or its writer did not finish)");
    return out;
  }
  counted.gc_runs = 0;
  for (size_t i = 0; i < t.index().size(); ++i) counted.gc_runs += t.index().kind(i) == TraceRecordKind::gc;
  const json& metrics = summary->metrics;
  recorded_totals_each(counted, [&](const char* name, int64_t records) {
    const auto it = metrics.find(name);
    if (it == metrics.end() || !it->is_number_integer() || it->get<int64_t>() == records) return;
    std::ostringstream m;
    m << t.origin() << ": summary " << kSummaryMetrics << "." << name << " = " << it->get<int64_t>() << ", but the records give " << records;
    out.push_back(m.str());
  });
  return out;
}

}  // namespace triescope
