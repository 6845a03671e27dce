#include "app/report_check.h"

#include <map>
#include <set>
#include <sstream>

#include "app/report_check_step.h"
#include "app/report_escape.h"
#include "app/report_html_page.h"
#include "app/report_trace_summary.h"

namespace triescope::cli {

namespace {
// JUnit's failure type: an identifier per fault.
const char* fault_id(MaskFault f) {
  switch (f) {
    case MaskFault::missing_self: return "missing_self";
    case MaskFault::missing_ancestor: return "missing_ancestor";
    case MaskFault::sees_sibling: return "sees_sibling";
    case MaskFault::sees_descendant: return "sees_descendant";
    case MaskFault::sees_other_branch: return "sees_other_branch";
    case MaskFault::sees_free_slot: return "sees_free_slot";
    case MaskFault::wrong_position: return "wrong_position";
    case MaskFault::wrong_slot: return "wrong_slot";
  }
  return "violation";
}

std::string layout_rule(const MaskCheckReport& rep) { return rep.layout == "copies" ? "copy layout" : "ancestor rule"; }
}  // namespace

std::string violation_message(const MaskViolation& v) {
  std::ostringstream os;
  os << "step " << v.step;
  if (!v.phase.empty()) os << " (" << v.phase << ")";
  os << ", pass " << (v.pass.empty() ? std::string("forward") : v.pass) << ", row " << v.row;
  if (v.query != kNoNode) os << ", node " << v.query;
  if (v.slot != kNoSlot) {
    os << ", slot " << v.slot;
    if (v.slot_node != kNoNode) os << " (node " << v.slot_node << ")";
  }
  os << ": " << mask_fault_name(v.fault) << ": expected " << v.expected << ", found " << v.found;
  return os.str();
}

JunitCase check_junit_case(const std::string& path, const TraceReplay& t, const MaskCheckReport& rep, double seconds,
                           const std::string& text) {
  JunitCase c;
  c.name = path;
  c.classname = "triescope.check." + t.header_record().algorithm;
  c.seconds = seconds;
  c.system_out = text;
  for (const MaskViolation& v : rep.violations)
    c.failures.push_back({fault_id(v.fault), violation_message(v), v.describe() + "\nthe " + layout_rule(rep) + " (docs/python.md)"});
  for (const std::string& problem : rep.summary_problems)
    c.failures.push_back({"summary", problem, "the summary's counters against the records (docs/trace-format.md, summary)"});
  return c;
}

std::string check_html(const std::string& path, const TraceReplay& t, const MaskCheckReport& rep) {
  const std::string summary =
      trace_summary_html({{"", path, &t}}, {{"checked", std::to_string(rep.passes) + " forward passes, " + std::to_string(rep.rows) +
                                                             " mask rows, " + (rep.layout == "copies" ? "copy layout" : "tree layout")}});
  HtmlVerdict verdict;
  verdict.ok = rep.ok();
  verdict.text = rep.ok() ? "clean: every mask row and position id follows the " + layout_rule(rep)
                 : rep.violation_count == 0
                     ? std::to_string(rep.summary_problems.size()) + " summary counter" + (rep.summary_problems.size() == 1 ? "" : "s") +
                           " disagreeing with the records"
                     : std::to_string(rep.violation_count) + " violation" + (rep.violation_count == 1 ? "" : "s") + " of the " +
                           layout_rule(rep);
  std::ostringstream body;
  if (!rep.summary_problems.empty()) {
    body << "<h2>Summary</h2>\n<ul id=\"summary-problems\">\n";
    for (const std::string& problem : rep.summary_problems) body << "<li>" << markup_escape(problem) << "</li>\n";
    body << "</ul>\n";
  }
  if (rep.violation_count == 0) {
    body << "<p id=\"clean\">No violation: each query attends to exactly its ancestors and itself, and its position id is its depth, "
            "in every pass of every step.</p>\n";
    return html_page("triescope check: " + path, verdict, summary, body.str());
  }
  body << "<h2>Violations</h2>\n<table class=\"list\"><tr><th>#</th><th>step</th><th>pass</th><th>row</th><th>node</th><th>slot</th>"
          "<th>fault</th><th>expected</th><th>found</th></tr>\n";
  std::map<int32_t, std::vector<const MaskViolation*>> by_step;
  for (size_t i = 0; i < rep.violations.size(); ++i) {
    const MaskViolation& v = rep.violations[i];
    by_step[v.step].push_back(&v);
    body << "<tr><td>" << i + 1 << "</td><td><a href=\"#step-" << v.step << "\">" << v.step << "</a>"
         << (v.phase.empty() ? "" : " (" + markup_escape(v.phase) + ")") << "</td><td>"
         << markup_escape(v.pass.empty() ? std::string("forward") : v.pass) << "</td><td>" << v.row << "</td><td>"
         << (v.query == kNoNode ? std::string("-") : std::to_string(v.query)) << "</td><td>"
         << (v.slot == kNoSlot ? std::string("-") : std::to_string(v.slot)) << "</td><td>" << markup_escape(mask_fault_name(v.fault))
         << "</td><td>" << v.expected << "</td><td>" << v.found << "</td></tr>\n";
  }
  body << "</table>\n";
  if (rep.violation_count > static_cast<int64_t>(rep.violations.size()))
    body << "<p>... and " << rep.violation_count - static_cast<int64_t>(rep.violations.size())
         << " more (<code>--max N</code> lists more).</p>\n";
  for (const auto& [step, vs] : by_step) body << check_step_html(t, step, vs);
  return html_page("triescope check: " + path, verdict, summary, body.str());
}

}  // namespace triescope::cli
