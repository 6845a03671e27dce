#include <catch2/catch.hpp>

#include "core/decode/multigen.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace_replay.h"

using namespace triescope;

TEST_CASE("multigen: copy, structured and hybrid draw identical samples from one RNG stream", "[multigen]") {
  const uint64_t seed = GENERATE(1u, 2u, 3u);
  const int32_t k = GENERATE(1, 3, 8);
  const int warp = GENERATE(0, 1, 2, 3);  // plain, temperature, top-k, top-p
  CAPTURE(seed, k, warp);
  SyntheticConfig mc;
  mc.vocab_size = 50;
  mc.seed = seed;
  mc.eos_token = 49;
  mc.eos_per_million = 50000;
  mc.peakiness_q8 = 96;  // flat enough that samples differ
  SyntheticModel model(mc);
  MultiGenConfig c;
  c.num_samples = k;
  c.max_new_tokens = 14;
  c.eos_token = 49;
  c.sampling.seed = seed * 11;
  if (warp == 1) c.sampling.temperature = 0.7;
  if (warp == 2) c.sampling.top_k = 5;
  if (warp == 3) c.sampling.top_p = 0.8;
  const std::vector<int32_t> prompt = {4, 8, 15, 16, 23, 42};
  c.method = MultiGenMethod::copy;
  const MultiGenResult copy = multigen_decode(model, prompt, c);
  c.method = MultiGenMethod::structured;
  const MultiGenResult structured = multigen_decode(model, prompt, c);
  c.method = MultiGenMethod::hybrid;
  const MultiGenResult hybrid = multigen_decode(model, prompt, c);
  REQUIRE(copy.samples == structured.samples);
  REQUIRE(copy.samples == hybrid.samples);
  if (k > 1) {
    CHECK(structured.metrics.peak_slots < copy.metrics.peak_slots);
    bool differ = false;
    for (int32_t i = 1; i < k; ++i) differ = differ || copy.samples[static_cast<size_t>(i)] != copy.samples[0];
    CHECK(differ);  // the test would be vacuous if every sample were the same
  }
  // Method 3 never needs the k x k cross terms: it reads exactly what the mask allows.
  CHECK(hybrid.metrics.attention_cells_needed == structured.metrics.attention_cells_needed);
}

TEST_CASE("multigen: memory is O(n + t k) for the star, O(k (n + t)) for copies", "[multigen][kv]") {
  SyntheticConfig mc;
  mc.vocab_size = 64;
  SyntheticModel model(mc);
  MultiGenConfig c;
  c.num_samples = 10;
  c.max_new_tokens = 20;
  std::vector<int32_t> prompt(30, 7);
  c.method = MultiGenMethod::structured;
  const auto s = multigen_decode(model, prompt, c);
  c.method = MultiGenMethod::copy;
  const auto cp = multigen_decode(model, prompt, c);
  CHECK(s.metrics.peak_slots == 30 + 10 * 19);   // prompt once + the fed tokens of every sample
  CHECK(cp.metrics.peak_slots == 10 * (30 + 19));
}

TEST_CASE("multigen: the paper's Figure 1 (k = 2, n = 3, m = 2): star tree, block mask, blocked positions", "[multigen]") {
  SyntheticConfig mc;
  mc.vocab_size = 16;
  SyntheticModel model(mc);
  MultiGenConfig c;
  c.num_samples = 2;
  c.max_new_tokens = 2;
  MemoryTraceSink sink;
  multigen_decode(model, {1, 2, 3}, c, &sink);
  TraceReplay t(sink.records, "mem");
  const StepView v = t.at(1);
  REQUIRE(v.forward);
  CHECK(v.forward->positions == std::vector<int32_t>{3, 3});
  // Each generated token sees the prompt and itself, not the other sample.
  CHECK(v.forward->mask.row_hex(0) == "0f");  // slots 0, 1, 2, 3
  CHECK(v.forward->mask.row_hex(1) == "17");  // slots 0, 1, 2, 4
}
