// The CLI in-process (cli_main) with its standard output and error captured.
#pragma once
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.h"

namespace triescope::test {
struct CliRun {
  int rc;
  std::string out, err;
};

inline CliRun run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "triescope");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  const int rc = cli::cli_main(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {rc, out.str(), err.str()};
}
}  // namespace triescope::test
