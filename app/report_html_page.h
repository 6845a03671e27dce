// One self-contained HTML page (inline CSS, no script, no external file or
// network request) around a report's body: the title, the verdict and the
// trace's summary table. `triescope check --html` and `diff --html` write it.
#pragma once
#include <string>

namespace triescope::cli {

struct HtmlVerdict {
  bool ok = true;
  std::string text;  // plain text: "3 violations", "traces are equivalent"
};

// `summary` and `body`: HTML the caller built from escaped parts
// (report_trace_summary.h builds the summary table).
std::string html_page(const std::string& title, const HtmlVerdict& verdict, const std::string& summary, const std::string& body);

}  // namespace triescope::cli
