// CPU vs CUDA trace checks shared by the device tests (beam backends in
// test_backend.cpp, every algorithm in test_verify_kernels.cpp).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/decode/run_sample.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"
#include "cuda/cuda_backend.h"

namespace triescope::testing {

// Every samples/*.json of the source tree, sorted (the tests pick theirs at run time).
inline std::vector<std::string> sample_paths() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TRIESCOPE_SOURCE_DIR) + "/samples"))
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

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
  REQUIRE(gpu.front().value("backend", std::string()) == cuda::kBackendName);
  REQUIRE(cpu.front().value("backend", std::string()) != "cuda");
  const auto d = trace_diff(cpu, gpu);
  INFO((d ? d->describe() : std::string("equivalent")));
  REQUIRE(!d);
}

}  // namespace triescope::testing
