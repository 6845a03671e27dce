#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/commands.h"
#include "app/report_check.h"
#include "app/report_outputs.h"
#include "core/analysis/mask_check.h"
#include "core/analysis/verify_kind.h"
#include "core/common/error.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

int cmd_check(const Args& args) {
  auto p = parse_args(args, {"max", "junit", "html"}, {});
  TS_CHECK(p.positional.size() == 1, "check: expected one trace file");
  const int64_t max = p.get_int("max", 0, INT64_MAX, 20);
  const std::string& path = p.positional[0];
  ReportOutputs reports(p, "check");  // a bad report path is refused before the trace is read
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::optional<TraceReplay> t;
  MaskCheckReport rep;
  try {
    // Streamed: each record is parsed once, when the step it belongs to is replayed.
    t.emplace(TraceReplay::open(path));
    verify_kind_of_header(t->header(), path);  // an unregistered verify kind is refused by name
    rep = mask_check_trace(*t, static_cast<size_t>(max));
  } catch (const Error& e) {
    reports.write_error(path, "triescope.check", e.what(), seconds());
    throw;
  }
  std::ostringstream out;
  out << path << ": " << t->header_record().algorithm << ", " << (rep.layout == "copies" ? "copy" : "tree") << " layout, " << rep.passes
      << " forward passes, " << rep.rows << " mask rows: ";
  if (rep.violation_count == 0) {
    out << "every mask row and position id follows the " << (rep.layout == "copies" ? "copy layout" : "ancestor rule") << "\n";
  } else {
    out << rep.violation_count << " violation" << (rep.violation_count == 1 ? "" : "s") << "\n";
    for (const MaskViolation& v : rep.violations) out << "  " << v.describe() << "\n";
    if (rep.violation_count > static_cast<int64_t>(rep.violations.size()))
      out << "  ... " << rep.violation_count - static_cast<int64_t>(rep.violations.size()) << " more (--max N shows more)\n";
  }
  for (const std::string& problem : rep.summary_problems) out << "  summary: " << problem << "\n";
  std::cout << out.str();
  if (reports.junit()) reports.write_junit(junit_xml("triescope check", {check_junit_case(path, *t, rep, seconds(), out.str())}));
  if (reports.html()) reports.write_html(check_html(path, *t, rep));
  return rep.ok() ? 0 : 1;
}

}  // namespace triescope::cli
