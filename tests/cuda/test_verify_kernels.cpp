// Whole CPU vs CUDA traces for every algorithm on synthetic models (every
// samples/*.json that has one, and random configurations); this executable
// exits 77 without a device. Tolerance: none. The verification kernels
// themselves (Philox draws, DSBD layers, speculative chains, lookahead) are
// twin cases (twin_cases_philox.cpp, twin_cases_verify.cpp,
// twin_cases_lookahead.cpp, run by test_twin_cases.cpp).
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <random>
#include <sstream>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/trace/trace_diff.h"
#include "cuda/cuda_backend.h"
#include "random_samples.h"
#include "test_util.h"
#include "trace_util.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("CPU and CUDA traces are equivalent for every synthetic sample of every algorithm", "[cuda][trace]") {
  const std::vector<std::string> paths = sample_paths();
  std::set<std::string> algorithms;
  for (const auto& path : paths) {
    const json j = json_load_file(path);
    const std::string algo = j.value("algorithm", std::string());
    if (j["model"].value("type", std::string()) != "synthetic") continue;
    if (j.contains("draft_model") && j["draft_model"].value("type", std::string()) != "synthetic") continue;
    DYNAMIC_SECTION(path) {
      Sample cpu = sample_load(path), gpu = sample_load(path);
      cuda::sample_use_cuda(gpu);
      check_equivalent(run_trace(cpu), run_trace(gpu));
    }
    algorithms.insert(algo);
  }
  // today: trie beam search, beam sampling, speculative, dsbd, lookahead, multigen
  CHECK(algorithms.size() >= 6);
}

TEST_CASE("CPU and CUDA traces are equivalent for random configurations of every sampling / verifying algorithm", "[cuda][trace]") {
  const int variant = GENERATE(range(0, 6));
  const uint64_t seed = test_seed(7400 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  for (const json& j : random_samples(rng)) {
    DYNAMIC_SECTION(j.dump()) {
      Sample cpu = sample_parse(j, "random"), gpu = sample_parse(j, "random");
      cuda::sample_use_cuda(gpu);
      check_equivalent(run_trace(cpu), run_trace(gpu));
    }
  }
}
