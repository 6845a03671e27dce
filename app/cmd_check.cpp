#include <iostream>

#include "app/commands.h"
#include "core/analysis/mask_check.h"
#include "core/analysis/verify_kind.h"
#include "core/common/error.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

int cmd_check(const Args& args) {
  auto p = parse_args(args, {"max"}, {});
  TS_CHECK(p.positional.size() == 1, "check: expected one trace file");
  int64_t max = 20;
  if (p.has("max")) {
    try {
      max = std::stoll(p.get("max"));
    } catch (const std::exception&) {
      TS_FAIL("check: --max must be an integer, got '" << p.get("max") << "'");
    }
    TS_CHECK(max >= 0, "check: --max must be >= 0, got " << max);
  }
  const std::string& path = p.positional[0];
  // Streamed: each record is parsed once, when the step it belongs to is replayed.
  const TraceReplay t = TraceReplay::open(path);
  verify_kind_of_header(t.header(), path);  // an unregistered verify kind is refused by name
  const MaskCheckReport rep = mask_check_trace(t, static_cast<size_t>(max));
  std::cout << path << ": " << t.header().value("algorithm", "?") << ", " << (rep.layout == "copies" ? "copy" : "tree") << " layout, " << rep.passes
            << " forward passes, " << rep.rows << " mask rows: ";
  if (rep.ok()) {
    std::cout << "every mask row and position id follows the "
              << (rep.layout == "copies" ? "copy layout" : "ancestor rule") << "\n";
    return 0;
  }
  std::cout << rep.violation_count << " violation" << (rep.violation_count == 1 ? "" : "s") << "\n";
  for (const MaskViolation& v : rep.violations) std::cout << "  " << v.describe() << "\n";
  if (rep.violation_count > static_cast<int64_t>(rep.violations.size()))
    std::cout << "  ... " << rep.violation_count - static_cast<int64_t>(rep.violations.size()) << " more (--max N shows more)\n";
  return 1;
}

}  // namespace triescope::cli
