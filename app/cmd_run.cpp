#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/decode/run_sample.h"

namespace triescope::cli {

int cmd_run(const Args& args) {
  auto p = parse_args(args, {"out", "backend"}, {"quiet"});
  TS_CHECK(p.positional.size() == 1, "run: expected one sample file, got " << p.positional.size() << " arguments");
  const std::string backend = p.get("backend", "cpu");
  TS_CHECK(backend == "cpu", "run: --backend " << backend << " is not available in this build (cpu)");
  Sample s = sample_load(p.positional[0]);
  std::string out = p.get("out");
  if (out.empty()) out = std::filesystem::path(p.positional[0]).stem().string() + ".trace.jsonl";
  TraceFileWriter writer(out);  // temp file + rename: no half-written trace on failure
  std::ostringstream report;
  run_sample(s, &writer, report);
  writer.commit();
  if (!p.has("quiet")) std::cout << report.str() << "trace: " << out << "\n";
  return 0;
}

}  // namespace triescope::cli
