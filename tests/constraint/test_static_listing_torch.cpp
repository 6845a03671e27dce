// The paper's Algorithm 2 listing in LibTorch ops (bench/static_listing_torch.h)
// against core's CPU reference (vntk_sparse, dense_lookup, static_next_state,
// log_softmax_row, topk_candidates): exact masks, valid counts and next
// states, top-k ids equal. Runs on the CPU LibTorch here; the same code runs
// on a CUDA LibTorch.
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <random>

#include "bench/static_listing_torch.h"
#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"

using namespace triescope;

namespace {

uint64_t fresh_seed() {
  static const uint64_t s = [] {
    if (const char* e = std::getenv("TRIESCOPE_TEST_SEED")) return static_cast<uint64_t>(std::strtoull(e, nullptr, 10));
    std::random_device rd;
    const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    std::cout << "test_static_listing_torch: base seed " << v << " (rerun with TRIESCOPE_TEST_SEED=<seed>)\n";
    return v;
  }();
  return s;
}

// Beam states for trie level t: walks of random items (valid states at level
// t), plus a dead beam, a state of another level and a leaf, as a decoder can hold.
std::vector<int64_t> beam_states(const ConstraintSet& c, const TransitionMatrix& tm, int32_t t, int32_t n, std::mt19937_64& rng) {
  std::vector<int64_t> s(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const int32_t* item = c.item(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.size())));
    int64_t st = 0;
    for (int32_t j = 0; j < t; ++j) st = static_next_state(tm, st, item[j], j);
    s[static_cast<size_t>(i)] = st;
  }
  if (n >= 4) {
    s[1] = kDeadState;
    s[2] = static_cast<int64_t>(rng() % static_cast<uint64_t>(tm.num_states()));  // any level
    s[3] = tm.num_states() - 1;                                                   // a leaf
  }
  return s;
}

}  // namespace

TEST_CASE("Algorithm 2 listing in LibTorch: equals the CPU reference (masks, valid, next states, top-k)", "[constraint][torch]") {
  const CsrLayout layout = GENERATE(CsrLayout::stacked, CsrLayout::compact);
  const int32_t d = GENERATE(0, 1, 2);
  const int32_t V = GENERATE(5, 40, 300, 2048);
  const uint64_t variant = GENERATE(range(0, 3));
  const uint64_t seed = fresh_seed() + 0x9e3779b97f4a7c15ull * (variant + 1) + static_cast<uint64_t>(V) * 131 + static_cast<uint64_t>(d) * 7 +
                        (layout == CsrLayout::compact ? 3 : 0);
  CAPTURE(csr_layout_name(layout), d, V, seed);
  std::mt19937_64 rng(seed);
  const int32_t L = std::uniform_int_distribution<int32_t>(3, 5)(rng);
  const int64_t items = std::min<int64_t>(std::uniform_int_distribution<int64_t>(1, V == 2048 ? 3000 : 600)(rng), static_cast<int64_t>(std::pow(double(V), double(L)) / 2));
  const ConstraintSet c = constraint_set_random(items, L, V, rng());
  const TransitionMatrix tm = TransitionMatrix::build(c, {d, layout});
  StaticListingTorch ts(tm, "cpu");
  CHECK(ts.device_bytes() > 0);

  const int32_t groups = 2, M = std::uniform_int_distribution<int32_t>(2, 6)(rng), n = groups * M;
  const int32_t k = std::uniform_int_distribution<int32_t>(1, 2 * M)(rng);
  CAPTURE(L, items, M, k);
  std::normal_distribution<float> g(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(n) * static_cast<size_t>(V));
  std::vector<double> scores(static_cast<size_t>(n));
  for (auto& x : logits) x = g(rng);
  for (auto& x : scores) x = -std::uniform_real_distribution<double>(0.0, 5.0)(rng);

  for (int32_t t = 0; t < L; ++t) {
    CAPTURE(t);
    const auto states = beam_states(c, tm, t, n, rng);
    ts.set_inputs(logits.data(), n, states.data(), scores.data());
    ts.run(t, groups, k, /*keep_masked=*/true);
    const StaticListingTorchResult r = ts.result();

    // CPU reference: double log-softmax, then dense_lookup / vntk_sparse.
    std::vector<double> lp(logits.size());
    for (int32_t i = 0; i < n; ++i) log_softmax_row(logits.data() + static_cast<size_t>(i) * V, V, lp.data() + static_cast<size_t>(i) * V);
    std::vector<int32_t> valid(static_cast<size_t>(n));
    if (t < d) dense_lookup(tm, states.data(), n, t, lp.data(), valid.data());
    else vntk_sparse<double>(tm, states.data(), n, t, lp.data(), nullptr, nullptr, valid.data());
    CHECK(r.valid == valid);
    REQUIRE(r.masked_logprobs.size() == lp.size());
    int64_t mask_mismatch = 0, value_mismatch = 0;
    for (size_t i = 0; i < lp.size(); ++i) {
      const bool a = std::isinf(r.masked_logprobs[i]), b = std::isinf(lp[i]);
      mask_mismatch += a != b;
      if (!a && !b) value_mismatch += std::abs(static_cast<double>(r.masked_logprobs[i]) - lp[i]) > 1e-5 * (1.0 + std::abs(lp[i]));
    }
    CHECK(mask_mismatch == 0);
    CHECK(value_mismatch == 0);

    // Next states through the step's gather: every allowed (beam, token) pair
    // and, per beam, every token (|V| <= 300) or 64 random ones (|V| = 2048;
    // all pairs would gather [n |V| x B_t] slices).
    std::vector<int64_t> qs;
    std::vector<int32_t> qt;
    for (int32_t i = 0; i < n; ++i)
      for (int32_t v = 0; v < V; ++v) {
        const bool allowed = !std::isinf(lp[static_cast<size_t>(i) * V + static_cast<size_t>(v)]);
        if (!allowed && V > 300 && rng() % static_cast<uint64_t>(V) >= 64) continue;
        qs.push_back(states[static_cast<size_t>(i)]);
        qt.push_back(v);
      }
    qs.push_back(tm.num_states());  // out of range: dead
    qt.push_back(0);
    qs.push_back(0);
    qt.push_back(V);  // token out of range: dead
    const auto nx = ts.next_states(qs, qt, t);
    int64_t next_mismatch = 0;
    for (size_t q = 0; q < qs.size(); ++q) next_mismatch += nx[q] != static_next_state(tm, qs[q], qt[q], t);
    CHECK(next_mismatch == 0);

    // Top-k of each group over the listing's own masked log-probs (so the
    // float log-softmax cannot reorder near-ties): ids equal, next states equal.
    for (int32_t gi = 0; gi < groups; ++gi) {
      CAPTURE(gi);
      std::vector<double> glp(static_cast<size_t>(M) * V);
      for (size_t i = 0; i < glp.size(); ++i) glp[i] = r.masked_logprobs[static_cast<size_t>(gi) * M * V + i];
      const auto want = topk_candidates(glp.data(), M, V, scores.data() + static_cast<size_t>(gi) * M, k);
      REQUIRE(r.top_count[static_cast<size_t>(gi)] == static_cast<int32_t>(want.size()));
      for (int32_t j = 0; j < k; ++j) {
        const size_t o = static_cast<size_t>(gi) * k + static_cast<size_t>(j);
        CAPTURE(j);
        if (j < static_cast<int32_t>(want.size())) {
          const int64_t flat = want[static_cast<size_t>(j)].flat + static_cast<int64_t>(gi) * M * V;
          CHECK(r.top_flat[o] == flat);
          CHECK(std::abs(r.top_score[o] - want[static_cast<size_t>(j)].score) <= 1e-12 * (1.0 + std::abs(want[static_cast<size_t>(j)].score)));
          CHECK(r.top_next[o] == static_next_state(tm, states[static_cast<size_t>(flat / V)], static_cast<int32_t>(flat % V), t));
          CHECK(r.top_next[o] != kDeadState);
        } else {
          CHECK(r.top_flat[o] == -1);
          CHECK(r.top_next[o] == kDeadState);
        }
      }
    }
  }
}

TEST_CASE("Algorithm 2 listing in LibTorch: bad input is refused by name", "[constraint][torch]") {
  const auto c = constraint_set_random(50, 3, 16, 5);
  const auto tm = TransitionMatrix::build(c, {1, CsrLayout::compact});
  StaticListingTorch ts(tm, "cpu");
  std::vector<float> logits(4 * 16, 0.0f);
  std::vector<int64_t> states(4, 0);
  std::vector<double> scores(4, 0.0);
  CHECK_THROWS_WITH(ts.run(0, 1, 1), Catch::Contains("before set_inputs"));
  ts.set_inputs(logits.data(), 4, states.data(), scores.data());
  CHECK_THROWS_WITH(ts.run(3, 1, 1), Catch::Contains("step 3 outside [0, L = 3)"));
  CHECK_THROWS_WITH(ts.run(0, 3, 1), Catch::Contains("do not split into 3 groups"));
  CHECK_THROWS_WITH(ts.run(0, 1, 65), Catch::Contains("k = 65"));
  std::string why;
  CHECK_FALSE(StaticListingTorch::device_usable("tpu", &why));
  CHECK_FALSE(why.empty());
}
