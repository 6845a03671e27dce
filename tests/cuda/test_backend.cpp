// The CUDA backend against the CPU reference: CudaSyntheticModel's logits
// bit for bit, and whole traces through `triescope diff`'s comparison
// (trace_diff) for every synthetic sample and for random configurations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include "core/decode/tree_step.h"
#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/beam_config.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace_diff.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_synthetic_model.h"
#include "hypotheses_check.h"
#include "test_util.h"
#include "trace_util.h"

using namespace triescope;
using namespace triescope::testing;

namespace {
SyntheticConfig random_config(std::mt19937_64& rng) {
  SyntheticConfig c;
  c.vocab_size = std::uniform_int_distribution<int32_t>(32, 600)(rng);
  c.seed = rng() >> 1;
  c.peakiness_q8 = std::uniform_int_distribution<int32_t>(64, 4 * 256)(rng);
  c.repetitiveness_q8 = std::uniform_int_distribution<int32_t>(0, 256)(rng);
  c.ngram = std::uniform_int_distribution<int32_t>(1, 4)(rng);
  if (std::bernoulli_distribution(0.6)(rng)) {
    c.eos_token = std::uniform_int_distribution<int32_t>(0, c.vocab_size - 1)(rng);
    c.eos_per_million = std::uniform_int_distribution<int32_t>(0, 60000)(rng);
  }
  return c;
}
bool same_bits(const Logits& a, const Logits& b) {
  return a.rows == b.rows && a.vocab == b.vocab && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}
}  // namespace

TEST_CASE("CudaSyntheticModel logits equal SyntheticModel's bit for bit through forwards and compactions", "[cuda][model]") {
  const int32_t variant = GENERATE(0, 1, 2, 3);
  const uint64_t seed = test_seed(8000 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  const SyntheticConfig cfg = random_config(rng);
  SyntheticModel cpu(cfg);
  cuda::CudaSyntheticModel gpu(cfg);
  CHECK(gpu.describe() == cpu.describe());
  // a random forest grown step by step; each step feeds its new nodes with ancestor masks
  TokenTree t;
  KvSlots slots;
  std::vector<int32_t> frontier;
  for (int32_t step = 0; step < 40; ++step) {
    CAPTURE(step);
    std::vector<int32_t> fresh;
    const int32_t n = std::uniform_int_distribution<int32_t>(1, 12)(rng);
    for (int32_t k = 0; k < n; ++k) {
      const int32_t tok = std::uniform_int_distribution<int32_t>(0, cfg.vocab_size - 1)(rng);
      int32_t id;
      if (frontier.empty() || std::bernoulli_distribution(0.05)(rng)) id = t.add_root(tok);
      else id = t.add_child(frontier[static_cast<size_t>(std::uniform_int_distribution<size_t>(0, frontier.size() - 1)(rng))], tok, 0.0);
      t.node(id).slot = slots.allocate();
      fresh.push_back(id);
    }
    const StepInput in = tree_step_input(t, fresh, slots.num_slots());
    Logits a, b;
    cpu.forward(in, a);
    gpu.forward(in, b);
    REQUIRE(same_bits(a, b));
    frontier.insert(frontier.end(), fresh.begin(), fresh.end());
    if (std::bernoulli_distribution(0.2)(rng)) {
      // GC keeping a random subset of the frontier's branches
      std::vector<int32_t> live;
      for (int32_t id : frontier)
        if (std::bernoulli_distribution(0.3)(rng)) live.push_back(id);
      const CompactionPlan plan = kv_collect_garbage(t, live, slots.num_slots());
      cpu.compact(plan);
      gpu.compact(plan);
      slots.apply(plan);
      frontier = live;
    }
  }
  // reset empties the cache on both
  cpu.reset();
  gpu.reset();
  TokenTree t2;
  const int32_t r = t2.add_root(1);
  t2.node(r).slot = 0;
  StepInput in;
  in.tokens = {1};
  in.positions = {0};
  in.slots = {0};
  in.num_slots = 2;
  in.mask = BitMask(1, 2);
  in.mask.set(0, 0);
  in.mask.set(0, 1);  // slot 1 was written before reset: now empty on both
  Logits a, b;
  CHECK_THROWS_AS(cpu.forward(in, a), triescope::Error);
  CHECK_THROWS_AS(gpu.forward(in, b), triescope::Error);
}

TEST_CASE("CPU and CUDA traces are equivalent for every synthetic beam sample, as trie and as batch", "[cuda][trace]") {
  // every samples/*.json with a synthetic model and a beam algorithm, found at run time
  const std::vector<std::string> paths = sample_paths();
  int ran = 0;
  for (const auto& path : paths) {
    const json j = json_load_file(path);
    const std::string algo = j.value("algorithm", std::string());
    if (j["model"].value("type", std::string()) != "synthetic" || (algo != "trie_beam_search" && algo != "batch_beam_search"))
      continue;
    for (const std::string algorithm : {"trie_beam_search", "batch_beam_search"}) {
      DYNAMIC_SECTION(path << " as " << algorithm) {
        Sample cpu = sample_load(path), gpu = sample_load(path);
        cpu.algorithm = gpu.algorithm = algorithm;
        cuda::sample_use_cuda(gpu);
        check_equivalent(run_trace(cpu), run_trace(gpu));
      }
      ++ran;
    }
  }
  CHECK(ran >= 2);  // synthetic_long at least
}

// Untraced, a trie decode on the CUDA backend keeps each step's mask rows
// and logits on the device and replays a captured decode forward per bucket
// (docs/cuda.md): its hypotheses must still be the CPU reference's, bit for
// bit. This is the decode path no trace shows.
TEST_CASE("untraced trie decodes on the CUDA backend (rows on the device, captured steps) equal the CPU's", "[cuda][trace]") {
  int ran = 0;
  for (const auto& path : sample_paths()) {
    const json j = json_load_file(path);
    if (j["model"].value("type", std::string()) != "synthetic" || j.value("algorithm", std::string()) != "trie_beam_search") continue;
    if (j.contains("constraint")) continue;  // a constraint ranks on the host: its logits come back
    DYNAMIC_SECTION(path) {
      Sample cpu = sample_load(path), gpu = sample_load(path);
      cuda::sample_use_cuda(gpu);
      const BeamConfig cfg = BeamConfig::from_json(JsonObjectReader(j["beam"], path, "beam"), cpu.model->vocab_size());
      const DecodeResult want = trie_beam_search(*cpu.model, cpu.prompt, cfg, nullptr, cpu.options);
      const DecodeResult got = trie_beam_search(*gpu.model, gpu.prompt, cfg, nullptr, gpu.options);
      testing::check_same_hypotheses(got, want);
      const auto* device_model = dynamic_cast<const cuda::CudaSyntheticModel*>(gpu.model.get());
      REQUIRE(device_model != nullptr);
      int64_t replays = 0;
      for (const auto& [bucket, n] : device_model->captured_forwards().replays_by_bucket) replays += n;
      CHECK(replays == want.metrics.model_calls - 1);  // every forward but the prefill
    }
    ++ran;
  }
  CHECK(ran >= 1);  // synthetic_long at least
}

TEST_CASE("CPU and CUDA traces are equivalent for random synthetic configurations", "[cuda][trace]") {
  const int32_t variant = GENERATE(range(0, 12));
  const uint64_t seed = test_seed(9000 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  const SyntheticConfig mc = random_config(rng);
  BeamConfig bc;
  bc.num_beams = std::uniform_int_distribution<int32_t>(1, std::min(16, mc.vocab_size / 2))(rng);
  bc.max_new_tokens = std::uniform_int_distribution<int32_t>(1, 48)(rng);
  bc.eos_token = mc.eos_token;
  bc.length_penalty = std::uniform_real_distribution<double>(0.0, 2.0)(rng);
  bc.early_stopping = static_cast<EarlyStopping>(std::uniform_int_distribution<int>(0, 2)(rng));
  bc.gc_interval = std::uniform_int_distribution<int32_t>(0, 5)(rng);
  std::vector<int32_t> prompt(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 70)(rng)));
  for (auto& tok : prompt) tok = std::uniform_int_distribution<int32_t>(0, mc.vocab_size - 1)(rng);
  CAPTURE(mc.vocab_size, mc.seed, mc.eos_token, mc.eos_per_million, bc.num_beams, bc.max_new_tokens, bc.gc_interval, prompt.size());
  SyntheticModel cpu(mc);
  cuda::CudaSyntheticModel gpu(mc);
  DecodeOptions cpu_opt, gpu_opt;
  cpu_opt.keyframe_interval = gpu_opt.keyframe_interval = std::uniform_int_distribution<int32_t>(0, 8)(rng);
  gpu_opt.backend = cuda::kBackendName;
  for (const bool trie : {true, false}) {
    CAPTURE(trie);
    MemoryTraceSink a, b;
    const DecodeResult ra = trie ? trie_beam_search(cpu, prompt, bc, &a, cpu_opt) : batch_beam_search(cpu, prompt, bc, &a, cpu_opt);
    const DecodeResult rb = trie ? trie_beam_search(gpu, prompt, bc, &b, gpu_opt) : batch_beam_search(gpu, prompt, bc, &b, gpu_opt);
    check_equivalent(a.records, b.records);
    REQUIRE(ra.hypotheses == rb.hypotheses);
  }
}

TEST_CASE("the cuda backend refuses a model it has no CUDA twin for, naming the file", "[cuda][trace]") {
  const std::string path = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/figure1_once_upon_a_time.json";
  Sample s = sample_load(path);
  try {
    cuda::sample_use_cuda(s);
    FAIL("expected an Error");
  } catch (const triescope::Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("figure1_once_upon_a_time.json") != std::string::npos);
    CHECK(msg.find("scripted") != std::string::npos);
  }
}
