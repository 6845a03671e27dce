// The cuda backend's STATIC index on the device (cuda::StaticIndexCuda with
// VerifyExec::device: the static_mask kernel) in whole decodes, and
// sample_use_cuda's wiring: a STATIC sample's cuda trace takes its
// constraint records from the device and equals the CPU's. Its masks against
// core's VntkIndex are a twin case (twin_cases_static.cpp).
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "cuda/cuda_backend.h"
#include "static_index_check.h"
#include "trace_util.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("cuda static index: constrained trie and batch decodes give the CPU's traces", "[cuda][constraint]") {
  const uint64_t variant = GENERATE(range(0, 12));
  const uint64_t seed = test_seed(73000 + variant);
  CAPTURE(base_seed(), seed);
  check_static_decodes(cuda::VerifyExec::device, seed);
}

TEST_CASE("cuda backend: a STATIC sample masks on the device and its trace equals the CPU's", "[cuda][constraint][trace]") {
  const std::vector<std::string> paths = sample_paths();
  int ran = 0;
  for (const auto& path : paths) {
    const json j = json_load_file(path);
    if (!j.contains("constraint") || j["model"].value("type", std::string()) != "synthetic") continue;
    for (const std::string algorithm : {"trie_beam_search", "batch_beam_search"}) {
      DYNAMIC_SECTION(path << " as " << algorithm) {
        Sample cpu = sample_load(path), gpu = sample_load(path);
        cpu.algorithm = gpu.algorithm = algorithm;
        cuda::sample_use_cuda(gpu);
        const bool vntk = j["constraint"].value("impl", std::string("vntk")) == "vntk";
        auto* sc = dynamic_cast<StaticConstraint*>(gpu.constraint.get());
        REQUIRE(sc);
        auto* idx = dynamic_cast<cuda::StaticIndexCuda*>(&sc->index());
        REQUIRE((idx != nullptr) == vntk);
        check_equivalent(run_trace(cpu), run_trace(gpu));
        if (idx) {
          REQUIRE(idx->exec() == cuda::VerifyExec::device);
          REQUIRE(idx->kernel_runs() > 0);
          REQUIRE(idx->fallback_runs() == 0);
        }
      }
      ++ran;
    }
  }
  CHECK(ran >= 4);
}
