// cuda::DeviceSelector against the reference CpuSelector (core/select/selector.h):
// the same candidates, scores bit for bit, on random rows full of ties (few
// logit levels, repeated rows, equal beam scores) and masked tokens, from
// logits and from log-probs; rows fewer than planned; the fallback past
// kTopkMaxK; and a run over the plan refused by name.
#include <catch2/catch.hpp>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/select/log_normaliser.h"
#include "core/select/selector.h"
#include "cuda/device_selector.h"
#include "cuda/topk_candidates.cuh"
#include "test_util.h"

using namespace triescope;
using namespace triescope::testing;

namespace {

struct Rows {
  std::vector<float> logits;  // [rows x vocab]
  std::vector<double> beam;   // [rows]
  std::vector<const float*> ptrs;
};

// Logits on `levels` values (ties inside a row), some rows copies of an
// earlier one and beam scores on 3 values (ties across rows), a share of
// tokens at -inf (masked by an engine).
Rows random_rows(std::mt19937_64& rng, int32_t rows, int32_t vocab, int32_t levels, double p_masked) {
  Rows r;
  r.logits.resize(static_cast<size_t>(rows) * vocab);
  std::uniform_int_distribution<int32_t> level(0, levels - 1);
  std::bernoulli_distribution masked(p_masked), copy(0.3);
  for (int32_t i = 0; i < rows; ++i) {
    float* row = r.logits.data() + static_cast<size_t>(i) * vocab;
    if (i > 0 && copy(rng)) {
      const int32_t src = std::uniform_int_distribution<int32_t>(0, i - 1)(rng);
      std::copy_n(r.logits.data() + static_cast<size_t>(src) * vocab, vocab, row);
      continue;
    }
    for (int32_t v = 0; v < vocab; ++v)
      row[v] = masked(rng) ? -std::numeric_limits<float>::infinity() : 0.37f * static_cast<float>(level(rng)) - 5.0f;
  }
  for (int32_t i = 0; i < rows; ++i) {
    r.beam.push_back(-0.75 * std::uniform_int_distribution<int32_t>(0, 2)(rng));
    r.ptrs.push_back(r.logits.data() + static_cast<size_t>(i) * vocab);
  }
  return r;
}

void require_same(const std::vector<ScoredCandidate>& want, const std::vector<ScoredCandidate>& got) {
  REQUIRE(got.size() == want.size());
  for (size_t j = 0; j < want.size(); ++j) {
    CAPTURE(j, want[j].flat, want[j].score, got[j].flat, got[j].score);
    REQUIRE(got[j].flat == want[j].flat);
    REQUIRE(got[j].score == want[j].score);  // bit for bit: the trace records it
  }
}

}  // namespace

TEST_CASE("cuda DeviceSelector equals CpuSelector bit for bit, ties and masked tokens included", "[cuda][beam][selector]") {
  struct Case {
    int32_t planned_rows, rows, vocab, k, levels;
    double p_masked;
  };
  // one row; a beam step of synthetic_long (15 x 512, k = 30); rows split
  // into chunks (vocab over kRowChunkMin); fewer rows than planned; a row
  // count whose chunks differ from the plan's; more k than finite tokens.
  const Case c = GENERATE(Case{1, 1, 7, 2, 2, 0.0}, Case{15, 15, 512, 30, 6, 0.1}, Case{4, 4, 9000, 8, 40, 0.05},
                          Case{8, 3, 256, 16, 1, 0.0}, Case{6, 5, 20000, 12, 3, 0.0}, Case{3, 3, 64, 40, 4, 0.9});
  const int32_t variant = GENERATE(0, 1);
  const uint64_t seed = test_seed(95000 + static_cast<uint64_t>(c.vocab) * 13 + static_cast<uint64_t>(c.rows) * 7 +
                                  static_cast<uint64_t>(variant));
  CAPTURE(c.planned_rows, c.rows, c.vocab, c.k, c.levels, c.p_masked, seed);
  std::mt19937_64 rng(seed);
  const Rows r = random_rows(rng, c.rows, c.vocab, c.levels, c.p_masked);
  const SelectionShape shape{c.planned_rows, c.vocab, c.k};
  CpuSelector cpu;
  cpu.plan(shape);
  cuda::DeviceSelector dev;
  dev.plan(shape);
  REQUIRE(dev.on_device());

  SECTION("from logits: the host's log-normaliser, the device's subtraction and ranking") {
    const auto want = cpu.run_logits(r.ptrs, r.beam.data(), c.k);
    REQUIRE(!want.empty());
    require_same(want, dev.run_logits(r.ptrs, r.beam.data(), c.k));
    require_same(want, dev.run_logits(r.ptrs, r.beam.data(), c.k));  // a second step on the same buffers
  }
  SECTION("from log-probs a constraint masked") {
    std::vector<double> lp(r.logits.size());
    log_softmax_rows(r.ptrs, c.vocab, lp.data());
    std::bernoulli_distribution mask(0.5);
    for (double& x : lp)
      if (mask(rng)) x = -std::numeric_limits<double>::infinity();
    const auto want = cpu.run_logprobs(lp.data(), c.rows, r.beam.data(), c.k);
    require_same(want, dev.run_logprobs(lp.data(), c.rows, r.beam.data(), c.k));
  }
}

TEST_CASE("cuda DeviceSelector: a k past kTopkMaxK runs on the CPU selector; a run past the plan is refused", "[cuda][beam][selector]") {
  const uint64_t seed = test_seed(95900);
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const Rows r = random_rows(rng, 2, 1200, 50, 0.0);
  const int32_t k = cuda::kTopkMaxK + 2;
  CpuSelector cpu;
  cpu.plan({2, 1200, k});
  cuda::DeviceSelector dev;
  dev.plan({2, 1200, k});
  CHECK_FALSE(dev.on_device());
  require_same(cpu.run_logits(r.ptrs, r.beam.data(), k), dev.run_logits(r.ptrs, r.beam.data(), k));

  cuda::DeviceSelector small;
  small.plan({1, 1200, 4});
  REQUIRE(small.on_device());
  try {
    small.run_logits(r.ptrs, r.beam.data(), 4);
    FAIL("a run over 2 rows on a plan for 1 was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("cuda selector: a step ranks 2 rows, planned for at most 1") != std::string::npos);
  }
}
