// CPU vs CUDA trace checks shared by the device tests (beam backends in
// test_backend.cpp, every algorithm in test_verify_kernels.cpp).
#pragma once
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "core/decode/run_sample.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"

namespace triescope::testing {

inline std::vector<json> run_trace(Sample& s) {
  MemoryTraceSink sink;
  std::ostringstream report;
  run_sample(s, &sink, report);
  return sink.records;
}

// The comparison `triescope diff` runs; the headers must say which is which,
// so a CPU trace passed twice cannot make the check vacuous.
inline void check_equivalent(const std::vector<json>& cpu, const std::vector<json>& gpu) {
  REQUIRE(!cpu.empty());
  REQUIRE(gpu.front().value("backend", std::string()) == "cuda");
  REQUIRE(cpu.front().value("backend", std::string()) != "cuda");
  const auto d = trace_diff(cpu, gpu);
  INFO((d ? d->describe() : std::string("equivalent")));
  REQUIRE(!d);
}

}  // namespace triescope::testing
