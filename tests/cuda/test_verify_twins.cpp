// The cuda backend's device verifiers run on the host (VerifyExec::host_twin)
// inside whole decodes: identical traces to the CPU reference for every
// verifying sample and random configurations; the backend's wiring; a bad
// draft named. The verification code itself against core's reference, block
// by block, is twin cases (twin_cases_philox.cpp, twin_cases_verify.cpp,
// twin_cases_lookahead.cpp, run on the host twin by this binary).
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <sstream>

#include "core/config/json_reader.h"
#include "core/decode/dsbd.h"
#include "core/decode/lookahead.h"
#include "core/decode/multigen.h"
#include "core/decode/run_sample.h"
#include "core/decode/speculative.h"
#include "core/decode/tree_step.h"
#include "core/model/synthetic_model.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_verifiers.h"
#include "cuda/cuda_common.cuh"
#include "cuda/dsbd_verify.h"
#include "cuda/lookahead_verify.h"
#include "random_samples.h"
#include "test_util.h"
#include "trace_util.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("device DSBD verification flags a draft outside the domain", "[cuda][dsbd]") {
  const std::vector<double> p = {0.5, 0.5}, q = {0.5, 0.5};
  auto v = cuda::make_dsbd_verifier(cuda::VerifyExec::host_twin);
  CHECK_THROWS_WITH(v->verify_layer(p, q, {0, 2}, 1, AcceptRatio::p_over_q, 1, 1, 1), Catch::Contains("outside the domain"));
  CHECK_THROWS_WITH(v->verify_layer(p, q, {0}, 0, AcceptRatio::p_over_q, 1, 1, 1), Catch::Contains("width must be >= 1"));
}

namespace {

// Runs one sample on the CPU reference and with the cuda backend's verifiers
// run on the host; the traces must be identical record for record.
void check_sample_with_host_verifiers(Sample& cpu, Sample& twin) {
  cuda::verifiers_install(twin.options.verifiers, cuda::VerifyExec::host_twin);
  REQUIRE(twin.options.verifiers.kinds().size() >= 3);  // dsbd_layers, lookahead_candidates, speculative_chain
  MemoryTraceSink a, b;
  std::ostringstream ra, rb;
  run_sample(cpu, &a, ra);
  run_sample(twin, &b, rb);
  REQUIRE(a.records.size() == b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    CAPTURE(i);
    json x = a.records[i], y = b.records[i];
    x.erase("seconds");
    y.erase("seconds");
    REQUIRE(x == y);
  }
  REQUIRE(ra.str() == rb.str());
}

}  // namespace

TEST_CASE("decoders give identical traces with the device verifiers run on the host, every verifying sample", "[cuda][trace]") {
  const std::vector<std::string> paths = sample_paths();
  int ran = 0;
  for (const auto& path : paths) {
    const json j = json_load_file(path);
    const std::string algo = j.value("algorithm", std::string());
    if (algo != "dsbd" && algo != "speculative" && algo != "lookahead" && algo != "greedy") continue;
    if (j["model"].value("type", std::string()) == "transformer") continue;  // not built here without LibTorch
    DYNAMIC_SECTION(path) {
      Sample cpu = sample_load(path), twin = sample_load(path);
      check_sample_with_host_verifiers(cpu, twin);
    }
    ++ran;
  }
  CHECK(ran >= 4);  // dsbd_synthetic, dsbd_figure3, speculative_synthetic, lookahead_repetitive
}

TEST_CASE("decoders give identical traces with the device verifiers run on the host, random configurations", "[cuda][trace]") {
  const int variant = GENERATE(range(0, 8));
  const uint64_t seed = test_seed(500 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  const std::vector<json> samples = random_samples(rng);
  for (const json& j : samples) {
    DYNAMIC_SECTION(j.dump()) {
      Sample cpu = sample_parse(j, "random"), twin = sample_parse(j, "random");
      check_sample_with_host_verifiers(cpu, twin);
    }
  }
}

TEST_CASE("the cuda backend accepts every algorithm and refuses models without a CUDA twin, naming the file", "[cuda][trace]") {
  const std::string dir = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/";
  // a scripted target: refused before any device is touched
  for (const char* name : {"figure1_once_upon_a_time.json", "multigen_figure1.json", "dsbd_figure3.json"}) {
    CAPTURE(name);
    Sample s = sample_load(dir + name);
    CHECK_THROWS_WITH(cuda::sample_use_cuda(s), Catch::Contains(name) && Catch::Contains("model type \"scripted\""));
  }
  // a synthetic target with a scripted draft: the draft is named
  json j = json_load_file(dir + "dsbd_synthetic.json");
  j["draft_model"] = json_load_file(dir + "dsbd_figure3.json")["draft_model"];
  j["model"]["vocab_size"] = j["draft_model"]["vocab"].size();
  j["prompt"] = {0};
  Sample s = sample_parse(j, "mixed.json");
  CHECK_THROWS_WITH(cuda::sample_use_cuda(s), Catch::Contains("mixed.json") && Catch::Contains("draft_model type \"scripted\""));
  // every synthetic sample, whatever its algorithm: wired, so only a missing device can refuse it
  std::string why;
  const bool device = cuda::device_count(&why) > 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    const json sj = json_load_file(e.path().string());
    if (sj["model"].value("type", std::string()) != "synthetic") continue;
    CAPTURE(e.path().string());
    Sample t = sample_load(e.path().string());
    if (device) {
      cuda::sample_use_cuda(t);
      CHECK(t.options.backend == cuda::kBackendName);
      CHECK(t.options.verifiers.find<DsbdLayerVerifier>(kVerifyDsbdLayers));
      CHECK(t.options.verifiers.find<SpeculativeVerifier>(kVerifySpeculativeChain));
      CHECK(t.options.verifiers.find<LookaheadVerifier>(kVerifyLookahead));
    } else {
      CHECK_THROWS_WITH(cuda::sample_use_cuda(t), Catch::Contains(e.path().filename().string()) && Catch::Contains("no usable CUDA device"));
    }
  }
}
