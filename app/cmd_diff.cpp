#include <iostream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"

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
  const auto a = trace_read(p.positional[0]);
  const auto b = trace_read(p.positional[1]);
  const auto d = trace_diff(a, b, opt);
  if (!d) {
    std::cout << "equivalent: " << a.size() << " records (tolerance " << opt.tolerance << ")\n";
    return 0;
  }
  std::cout << p.positional[0] << " (A) vs " << p.positional[1] << " (B): " << d->describe() << "\n";
  return 1;
}

}  // namespace triescope::cli
