// The CPU twins added for the CUDA kernels (core/select/topk_candidates.h,
// core/kv/kv_compact.h), checked on the CPU against independent oracles, so
// the references the twin cases compare the kernels with (twin_cases.h) are
// themselves verified. The host half of cuda::IncrementalAncestorMask is a
// twin case (twin_cases_mask_rows.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>

#include "core/common/error.h"
#include "core/kv/kv_compact.h"
#include "core/mask/ancestor_mask.h"
#include "core/select/topk_candidates.h"
#include "test_util.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("topk_candidates picks by score desc, then flat index asc, skipping masked tokens", "[beam]") {
  const double inf = std::numeric_limits<double>::infinity();
  // row 0: tokens 1 and 2 tie; row 1 ties row 0's best after its beam score
  const std::vector<double> lp = {-3.0, -1.0, -1.0, -inf, /* row 1 */ -0.5, -inf, -2.0, -1.0};
  const std::vector<double> beam = {0.0, -0.5};
  const auto got = topk_candidates(lp.data(), 2, 4, beam.data(), 5);
  const std::vector<ScoredCandidate> want = {{-1.0, 1}, {-1.0, 2}, {-1.0, 4}, {-1.5, 7}, {-2.5, 6}};
  CHECK(got == want);
  CHECK(topk_candidates(lp.data(), 2, 4, beam.data(), 100).size() == 6);  // only 6 finite
  CHECK(topk_candidates(lp.data(), 2, 4, beam.data(), 0).empty());
}

TEST_CASE("topk_candidates equals repeated selection of the best remaining candidate", "[beam]") {
  const int32_t rows = GENERATE(1, 4, 15);
  const int32_t vocab = GENERATE(2, 33, 300);
  const int32_t variant = GENERATE(0, 1);
  const uint64_t seed = test_seed(static_cast<uint64_t>(rows) * 1000 + static_cast<uint64_t>(vocab) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(rows, vocab, variant, seed);
  std::mt19937_64 rng(seed);
  std::vector<double> lp(static_cast<size_t>(rows) * static_cast<size_t>(vocab)), beam(static_cast<size_t>(rows));
  for (auto& x : lp)
    x = std::bernoulli_distribution(0.2)(rng) ? -std::numeric_limits<double>::infinity()
                                              : -0.25 * std::uniform_int_distribution<int32_t>(0, variant ? 1000 : 3)(rng);
  for (auto& b : beam) b = -0.25 * std::uniform_int_distribution<int32_t>(0, 3)(rng);
  const int32_t k = std::uniform_int_distribution<int32_t>(1, 2 * rows + 1)(rng);
  const auto got = topk_candidates(lp.data(), rows, vocab, beam.data(), k);
  // oracle: k linear scans, each taking the best not yet taken
  std::vector<char> taken(lp.size(), 0);
  std::vector<ScoredCandidate> want;
  for (int32_t j = 0; j < k; ++j) {
    int64_t best = -1;
    double best_score = 0;
    for (int64_t f = 0; f < static_cast<int64_t>(lp.size()); ++f) {
      if (taken[static_cast<size_t>(f)] || std::isinf(lp[static_cast<size_t>(f)])) continue;
      const double s = beam[static_cast<size_t>(f / vocab)] + lp[static_cast<size_t>(f)];
      if (best < 0 || s > best_score) {  // strict: the first (lowest flat) of equal scores stays
        best = f;
        best_score = s;
      }
    }
    if (best < 0) break;
    taken[static_cast<size_t>(best)] = 1;
    want.push_back({best_score, best});
  }
  REQUIRE(got == want);
}

TEST_CASE("kv_compact gathers raw rows like compaction_apply and names a bad source", "[kv]") {
  const size_t row_bytes = GENERATE(1, 3, 16, 100);
  const uint64_t seed = test_seed(50 + row_bytes);
  CAPTURE(row_bytes, seed);
  std::mt19937_64 rng(seed);
  CompactionPlan plan;
  plan.old_num_slots = std::uniform_int_distribution<int32_t>(1, 200)(rng);
  for (int32_t i = 0, n = std::uniform_int_distribution<int32_t>(0, 300)(rng); i < n; ++i)
    plan.src.push_back(std::uniform_int_distribution<int32_t>(0, plan.old_num_slots - 1)(rng));
  std::vector<unsigned char> cache(static_cast<size_t>(plan.old_num_slots) * row_bytes);
  for (auto& c : cache) c = static_cast<unsigned char>(rng());
  std::vector<unsigned char> got(plan.src.size() * row_bytes + 1, 0xa5);
  kv_compact(plan, cache.data(), got.data(), row_bytes);
  got.pop_back();
  std::vector<unsigned char> want = cache;
  compaction_apply(plan, want, row_bytes);
  REQUIRE(got == want);

  CompactionPlan bad;
  bad.old_num_slots = 4;
  bad.src = {0, 4};
  std::vector<unsigned char> out(2 * row_bytes);
  std::vector<unsigned char> small(4 * row_bytes);
  CHECK_THROWS_WITH(kv_compact(bad, small.data(), out.data(), row_bytes), Catch::Contains("plan.src[1] = 4"));
}
