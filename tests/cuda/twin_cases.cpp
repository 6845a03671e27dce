// The twin-case registry (twin_cases.h).
#include "twin_cases.h"

namespace triescope::testing {

namespace {
std::deque<TwinCase>& registry() {
  static std::deque<TwinCase> cases;
  return cases;
}
}  // namespace

const char* twin_execution_name(TwinExecution e) {
  switch (e) {
    case TwinExecution::host_twin: return "host twin";
    case TwinExecution::host_runtime: return "cuda-emu";
    case TwinExecution::gpu: return "gpu";
  }
  return "?";
}

const std::deque<TwinCase>& twin_cases() { return registry(); }

void twin_case_add(TwinCase c) {
  registry().push_back(std::move(c));
  twin_runner_register(registry().back());
}

}  // namespace triescope::testing
