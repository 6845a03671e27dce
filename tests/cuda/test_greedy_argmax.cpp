// Greedy decoding's argmax seam on the cuda backend (cuda/greedy_argmax.h)
// against its CPU twin, argmax_row (core/decode/tree_step.h): on the device
// and as the host twin, over random rows with ties, NaNs and -inf, and a
// greedy decode through the seam against the CPU's.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "core/decode/greedy_decode.h"
#include "core/decode/tree_step.h"
#include "core/model/synthetic_model.h"
#include "cuda/greedy_argmax.h"
#include "test_util.h"

namespace triescope {

TEST_CASE("cuda greedy argmax equals argmax_row on rows with ties, NaN and -inf", "[cuda][greedy]") {
  const uint64_t seed = testing::test_seed(41);
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto exec = GENERATE(cuda::VerifyExec::device, cuda::VerifyExec::host_twin);
  CAPTURE(exec == cuda::VerifyExec::device);
  const auto argmax = cuda::make_greedy_argmax(exec);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t rows = std::uniform_int_distribution<int32_t>(1, 4)(rng);
    const int32_t vocab = std::uniform_int_distribution<int32_t>(1, 700)(rng);
    Logits logits;
    logits.resize(rows, vocab);
    std::uniform_int_distribution<int32_t> level(-3, 3);  // few distinct values: many ties
    for (float& x : logits.data) {
      const int32_t kind = std::uniform_int_distribution<int32_t>(0, 40)(rng);
      x = kind == 0 ? std::numeric_limits<float>::quiet_NaN() : kind == 1 ? -std::numeric_limits<float>::infinity() : 0.5f * level(rng);
    }
    if (trial % 5 == 0) logits.row(0)[0] = std::numeric_limits<float>::quiet_NaN();  // argmax_row's rule: 0 when row[0] is NaN
    for (int32_t r = 0; r < rows; ++r) {
      CAPTURE(trial, rows, vocab, r);
      REQUIRE(argmax->argmax(logits, r) == argmax_row(logits.row(r), vocab));
    }
  }
  Logits one;
  one.resize(2, 3);
  CHECK_THROWS_WITH(argmax->argmax(one, 2), Catch::Contains("row 2 outside the 2 rows"));
}

TEST_CASE("greedy decoding through the cuda argmax seam equals the CPU's, trace and tokens", "[cuda][greedy][trace]") {
  SyntheticConfig mc;
  mc.vocab_size = 97;
  mc.seed = testing::test_seed(42) >> 1;
  CAPTURE(mc.seed);
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65};
  SyntheticModel m1(mc), m2(mc);
  MemoryTraceSink a, b;
  DecodeOptions dev;
  dev.verifiers.put_seam<GreedyArgmax>(kGreedyArgmaxSeam, cuda::make_greedy_argmax(cuda::VerifyExec::device));
  const GreedyResult cpu = greedy_decode(m1, prompt, GreedyConfig{12, -1}, &a);
  const GreedyResult gpu = greedy_decode(m2, prompt, GreedyConfig{12, -1}, &b, dev);
  REQUIRE(cpu.tokens.size() == 12);
  CHECK(cpu.tokens == gpu.tokens);
  CHECK(a.records.size() == b.records.size());
  CHECK(cpu.metrics.to_json() == gpu.metrics.to_json());
  CHECK(cpu.metrics.to_json().value("verify_tokens", -1) == 0);
}

}  // namespace triescope
