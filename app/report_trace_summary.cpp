#include "app/report_trace_summary.h"

#include <sstream>

#include "app/report_escape.h"

namespace triescope::cli {

namespace {
// A header field as shown: "-" when the header has none.
std::string header_text(const std::string& value) { return value.empty() ? "-" : value; }
// The model is an object (type, path, hf_* fields): shown as compact JSON.
std::string header_text(const nlohmann::json& value) {
  return value.empty() ? "-" : text_shorten(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 300);
}
}  // namespace

std::string trace_summary_html(const std::vector<SummaryColumn>& columns, const std::vector<std::pair<std::string, std::string>>& extra) {
  using Field = std::string (*)(const SummaryColumn&);
  static const std::vector<std::pair<const char*, Field>> fields = {
      {"file", [](const SummaryColumn& c) { return c.path; }},
      {"algorithm", [](const SummaryColumn& c) { return header_text(c.trace->header_record().algorithm); }},
      {"backend", [](const SummaryColumn& c) { return header_text(c.trace->header_record().backend); }},
      {"model", [](const SummaryColumn& c) { return header_text(c.trace->header_record().model); }},
      {"verify kind", [](const SummaryColumn& c) { return header_text(c.trace->header_record().verify_kind); }},
      {"steps", [](const SummaryColumn& c) {
         return c.trace->steps().empty() ? std::string("none") : "0-" + std::to_string(c.trace->last_step());
       }},
      {"format", [](const SummaryColumn& c) { return std::string(kTraceFormat) + " version " + std::to_string(c.trace->header_record().version); }},
  };
  std::ostringstream os;
  os << "<table class=\"summary\">\n";
  if (columns.size() > 1) {
    os << "<tr><th></th>";
    for (const SummaryColumn& c : columns) os << "<th>" << markup_escape(c.heading) << "</th>";
    os << "</tr>\n";
  }
  for (const auto& [label, field] : fields) {
    os << "<tr><td>" << label << "</td>";
    for (const SummaryColumn& c : columns) os << "<td>" << markup_escape(field(c)) << "</td>";
    os << "</tr>\n";
  }
  for (const auto& [k, v] : extra)
    os << "<tr><td>" << markup_escape(k) << "</td><td colspan=\"" << columns.size() << "\">" << markup_escape(v) << "</td></tr>\n";
  os << "</table>\n";
  return os.str();
}

}  // namespace triescope::cli
