#include "app/report_diff.h"

#include <sstream>

#include "app/divergence_focus.h"
#include "app/report_diff_step.h"
#include "app/report_escape.h"
#include "app/report_html_page.h"
#include "app/report_step_parts.h"
#include "app/report_trace_summary.h"

namespace triescope::cli {

namespace {
// Trace A's record `i` (null past its end: B has more records).
std::optional<nlohmann::json> record_at(const TraceReplay& t, size_t i) {
  const TraceRecords r = t.records_view();
  if (i >= r.size()) return std::nullopt;
  nlohmann::json scratch;
  return r.at(i, scratch);
}
}  // namespace

std::string divergence_message(const TraceDivergence& d, const TraceReplay& a) {
  const std::optional<nlohmann::json> rec = record_at(a, d.record);
  const DivergenceFocus f = rec ? divergence_focus(d, *rec) : DivergenceFocus{};
  std::ostringstream os;
  if (d.step >= 0) os << "step " << d.step;
  else os << d.kind;
  if (!d.phase.empty()) os << " (" << d.phase << ")";
  os << ", record " << d.record << " (" << d.kind << ")";
  if (!f.pass.empty()) os << ", pass " << f.pass;
  if (f.row >= 0) os << ", row " << f.row;
  if (f.node >= 0) os << ", node " << f.node;
  if (f.slot >= 0) os << ", slot " << f.slot;
  os << ": field " << (d.field.empty() ? std::string("<record>") : d.field);
  if (d.index >= 0) os << " bit " << d.index;
  os << ": A = " << d.a << ", B = " << d.b;
  return os.str();
}

JunitCase diff_junit_case(const std::string& path_a, const std::string& path_b, const TraceReplay& a,
                          const std::optional<TraceDivergence>& first, double seconds, const std::string& text) {
  JunitCase c;
  c.name = path_b + " vs " + path_a;
  c.classname = "triescope.diff." + a.header_record().algorithm;
  c.seconds = seconds;
  c.system_out = text;
  if (first) c.failures.push_back({"divergence", divergence_message(*first, a), first->describe()});
  return c;
}

std::string diff_html(const std::string& path_a, const std::string& path_b, const TraceReplay& a, const TraceReplay& b,
                      const std::optional<TraceDivergence>& first, const TraceDiffOptions& opt) {
  std::ostringstream tol;
  tol << opt.tolerance << " (for non-integer numbers; structure compares exactly)";
  const std::string summary = trace_summary_html({{"A", path_a, &a}, {"B", path_b, &b}}, {{"tolerance", tol.str()}});
  HtmlVerdict verdict;
  verdict.ok = !first;
  verdict.text = first ? "diverges: " + divergence_message(*first, a)
                       : "equivalent: " + std::to_string(a.records_view().size()) + " records agree";
  const std::string title = "triescope diff: " + path_a + " (A) vs " + path_b + " (B)";
  if (!first) {
    return html_page(title, verdict, summary,
                     "<p id=\"clean\">No divergence: every record agrees (structure exactly, numbers within the tolerance; "
                     "provenance such as backend, model and wall times is not compared).</p>\n");
  }
  const TraceDivergence& d = *first;
  const std::optional<nlohmann::json> ra = record_at(a, d.record), rb = record_at(b, d.record);
  const DivergenceFocus f = ra ? divergence_focus(d, *ra) : DivergenceFocus{};
  std::ostringstream body;
  body << "<h2 id=\"divergence\">First divergence: " << markup_escape(d.step >= 0 ? "step " + std::to_string(d.step) : d.kind)
       << (f.node >= 0 ? ", node " + std::to_string(f.node) : std::string()) << "</h2>\n<table class=\"list\"><tr>";
  for (const char* h : {"step", "record", "pass", "row", "node", "field", "A", "B"}) body << "<th>" << h << "</th>";
  body << "</tr><tr>";
  auto cell = [&](const std::string& v) { body << "<td>" << markup_escape(v) << "</td>"; };
  cell(d.step >= 0 ? std::to_string(d.step) : "- (" + d.kind + ")");
  cell(std::to_string(d.record) + " (" + d.kind + (d.phase.empty() ? "" : ", phase " + d.phase) + ")");
  cell(f.pass.empty() ? "-" : f.pass);
  cell(f.row >= 0 ? std::to_string(f.row) : "-");
  cell(f.node >= 0 ? std::to_string(f.node) : "-");
  cell((d.field.empty() ? std::string("<record>") : d.field) + (d.index >= 0 ? " bit " + std::to_string(d.index) : ""));
  cell(d.a);
  cell(d.b);
  body << "</tr></table>\n";
  if (d.step >= 0 && ra && rb) return html_page(title, verdict, summary, body.str() + diff_step_html(a, b, d, f, *ra, *rb, opt));
  // A header, summary or missing record: no step to picture, the records themselves.
  std::vector<nlohmann::json> one_a, one_b;
  if (ra) one_a.push_back(*ra);
  if (rb) one_b.push_back(*rb);
  body << "<h2>The divergent record</h2><div class=\"side\"><div>" << raw_records_html("A: record " + std::to_string(d.record), one_a)
       << "</div><div>" << raw_records_html("B: record " + std::to_string(d.record), one_b) << "</div></div>\n";
  return html_page(title, verdict, summary, body.str());
}

}  // namespace triescope::cli
