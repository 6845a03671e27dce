#include "core/trace/summary_record.h"

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace triescope {

namespace {

constexpr const char* kOutputs = "outputs";

// j[key] when present, checked by `ok`; `fallback` when absent.
template <class Ok>
nlohmann::json read_field(const nlohmann::json& j, const char* key, Ok ok, const char* expected, nlohmann::json fallback,
                          const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  TS_CHECK(ok(*it), where << ": summary: field " << key << " must be " << expected << ", got " << json_brief(*it));
  return *it;
}

}  // namespace

nlohmann::json SummaryRecord::to_json() const {
  return {{"kind", "summary"}, {kOutputs, outputs}, {kSummaryMetrics, metrics}, {kSummarySeconds, seconds}};
}

SummaryRecord SummaryRecord::from_json(const nlohmann::json& j, const std::string& where) {
  TS_CHECK(j.is_object(), where << ": summary must be an object, got " << json_brief(j));
  SummaryRecord s;
  s.outputs = read_field(j, kOutputs, [](const nlohmann::json& v) { return v.is_array(); }, "an array", nlohmann::json::array(), where);
  s.metrics = read_field(j, kSummaryMetrics, [](const nlohmann::json& v) { return v.is_object(); }, "an object", nlohmann::json::object(), where);
  s.seconds = read_field(j, kSummarySeconds, [](const nlohmann::json& v) { return v.is_number(); }, "a number", 0.0, where).get<double>();
  return s;
}

}  // namespace triescope
