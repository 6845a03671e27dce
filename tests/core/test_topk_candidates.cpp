// topk_candidates (core/select) against its definition: every finite
// candidate scored, sorted by score descending then flat index ascending,
// the first k kept. Small random rows with many ties, -0.0, -inf and NaN.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/select/topk_candidates.h"

using namespace triescope;

namespace {
std::vector<ScoredCandidate> by_definition(const std::vector<double>& lp, int32_t rows, int32_t vocab, const std::vector<double>& beam, int32_t k) {
  std::vector<ScoredCandidate> all;
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t v = 0; v < vocab; ++v) {
      const double l = lp[static_cast<size_t>(r) * static_cast<size_t>(vocab) + static_cast<size_t>(v)];
      if (std::isfinite(l)) all.push_back({beam[static_cast<size_t>(r)] + l, int64_t{r} * vocab + v});
    }
  std::stable_sort(all.begin(), all.end(), [](const ScoredCandidate& a, const ScoredCandidate& b) { return a.score > b.score; });
  all.resize(std::min(all.size(), static_cast<size_t>(k)));
  return all;
}

// A small random step with many ties, -0.0, -inf and NaN among the logprobs.
struct RandomStep {
  int32_t rows, vocab, k;
  std::vector<double> lp, beam;
};
RandomStep random_step(std::mt19937_64& rng, int32_t max_rows, int32_t max_vocab, int32_t max_k) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  RandomStep st;
  st.rows = 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(max_rows));
  st.vocab = 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(max_vocab));
  st.k = static_cast<int32_t>(rng() % static_cast<uint64_t>(max_k));
  st.lp.resize(static_cast<size_t>(st.rows) * static_cast<size_t>(st.vocab));
  st.beam.resize(static_cast<size_t>(st.rows));
  for (double& x : st.lp) {
    const int m = static_cast<int>(rng() % 12);
    x = m == 0 ? -inf : m == 1 ? -0.0 : m == 2 ? nan : static_cast<double>(static_cast<int>(rng() % 5)) * 0.5 - 2.0;
  }
  for (double& x : st.beam) x = static_cast<double>(static_cast<int>(rng() % 3)) - 1.0;
  return st;
}
}  // namespace

TEST_CASE("topk_candidates equals its definition: ties by flat index, -inf and NaN never chosen", "[select][topk]") {
  std::mt19937_64 rng(20261126);
  for (int trial = 0; trial < 3000; ++trial) {
    const RandomStep st = random_step(rng, 6, 40, 24);
    CAPTURE(trial, st.rows, st.vocab, st.k);
    CHECK(topk_candidates(st.lp.data(), st.rows, st.vocab, st.beam.data(), st.k) == by_definition(st.lp, st.rows, st.vocab, st.beam, st.k));
  }
}

TEST_CASE("topk_candidates at a beam step's size keeps the 2b best of 15 x 32,000", "[select][topk]") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n(-12.0, 3.0);
  const int32_t rows = 15, vocab = 32000, k = 30;
  std::vector<double> lp(static_cast<size_t>(rows) * vocab), beam(rows);
  for (double& x : lp) x = n(rng);
  for (double& x : beam) x = n(rng);
  CHECK(topk_candidates(lp.data(), rows, vocab, beam.data(), k) == by_definition(lp, rows, vocab, beam, k));
}

TEST_CASE("topk_candidates gives the same list on 1, 2, 3 and 8 threads", "[select][topk][parallel]") {
  std::mt19937_64 rng(20261127);
  for (int trial = 0; trial < 400; ++trial) {
    const RandomStep st = random_step(rng, 17, 60, 40);
    const auto want = by_definition(st.lp, st.rows, st.vocab, st.beam, st.k);
    for (int32_t threads : {1, 2, 3, 8}) {
      CAPTURE(trial, st.rows, st.vocab, st.k, threads);
      CHECK(topk_candidates(st.lp.data(), st.rows, st.vocab, st.beam.data(), st.k, threads) == want);
    }
  }
}
