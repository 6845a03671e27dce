#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/commands.h"
#include "app/report_diff.h"
#include "app/report_outputs.h"
#include "core/common/error.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

int cmd_diff(const Args& args) {
  auto p = parse_args(args, {"tolerance", "junit", "html"}, {});
  TS_CHECK(p.positional.size() == 2, "diff: expected two trace files");
  TraceDiffOptions opt;
  if (p.has("tolerance")) {
    try {
      opt.tolerance = std::stod(p.get("tolerance"));
    } catch (const std::exception&) {
      TS_FAIL("diff: --tolerance must be a number, got '" << p.get("tolerance") << "'");
    }
    TS_CHECK(opt.tolerance >= 0, "diff: --tolerance must be >= 0");
  }
  ReportOutputs reports(p, "diff");  // a bad report path is refused before the traces are read
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::optional<TraceReplay> a, b;
  std::vector<TraceDivergence> d;
  try {
    // Streamed: each trace's records are parsed one at a time, side by side.
    a.emplace(TraceReplay::open(p.positional[0]));
    b.emplace(TraceReplay::open(p.positional[1]));
    d = trace_diff_all(a->records_view(), b->records_view(), opt, 1);
  } catch (const Error& e) {
    reports.write_error(p.positional[1] + " vs " + p.positional[0], "triescope.diff", e.what(), seconds());
    throw;
  }
  std::ostringstream out;
  if (d.empty()) out << "equivalent: " << a->records_view().size() << " records (tolerance " << opt.tolerance << ")\n";
  else out << p.positional[0] << " (A) vs " << p.positional[1] << " (B): " << d.front().describe() << "\n";
  std::cout << out.str();
  std::optional<TraceDivergence> first;
  if (!d.empty()) first = d.front();
  if (reports.junit()) reports.write_junit(junit_xml("triescope diff", {diff_junit_case(p.positional[0], p.positional[1], *a, first, seconds(), out.str())}));
  if (reports.html()) reports.write_html(diff_html(p.positional[0], p.positional[1], *a, *b, first, opt));
  return d.empty() ? 0 : 1;
}

}  // namespace triescope::cli
