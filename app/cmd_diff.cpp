#include <iostream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

int cmd_diff(const Args& args) {
  auto p = parse_args(args, {"tolerance"}, {});
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
  // Streamed: each trace's records are parsed one at a time, side by side.
  const TraceReplay a = TraceReplay::open(p.positional[0]);
  const TraceReplay b = TraceReplay::open(p.positional[1]);
  const auto d = trace_diff_all(a.records_view(), b.records_view(), opt, 1);
  if (d.empty()) {
    std::cout << "equivalent: " << a.records_view().size() << " records (tolerance " << opt.tolerance << ")\n";
    return 0;
  }
  std::cout << p.positional[0] << " (A) vs " << p.positional[1] << " (B): " << d.front().describe() << "\n";
  return 1;
}

}  // namespace triescope::cli
