// STATIC's whole step (core/constraint/static_step.h) against the
// full-vocabulary path it replaces: log_softmax_row of every row, the -inf
// mask (dense_lookup / vntk_sparse), topk_candidates per group,
// static_next_state of the winners. Ids, counts, valid counts and next
// states must be identical; scores agree within 1e-12 relative, the only
// difference being the log-normaliser's rounding (a 32-lane FMA-based sum of
// exponentials instead of one sequential glibc sum; both within a few ulp of
// the exact value). Plus the decoding loop when fewer ids than beams remain.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "../cuda/test_util.h"
#include "core/constraint/static_decode.h"
#include "core/constraint/static_step.h"
#include "core/constraint/vntk.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"

using namespace triescope;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

bool close(double a, double b) { return a == b || std::abs(a - b) <= 1e-12 * (1.0 + std::abs(b)); }

// One step both ways, compared.
void check_step(const TransitionMatrix& tm, const std::vector<float>& logits, const std::vector<int64_t>& states, const std::vector<double>& scores,
                int32_t groups, int32_t k, int32_t t, StaticStepResult* got_out = nullptr) {
  const int32_t V = tm.vocab_size, n = static_cast<int32_t>(states.size()), M = n / groups;
  StaticStep step(tm);
  StaticStepResult got;
  step.run(logits.data(), states.data(), scores.data(), n, groups, k, t, got);
  std::vector<double> lp(logits.size());
  for (int32_t i = 0; i < n; ++i) log_softmax_row(logits.data() + static_cast<size_t>(i) * V, V, lp.data() + static_cast<size_t>(i) * V);
  std::vector<int32_t> valid(static_cast<size_t>(n));
  if (t < tm.dense_levels) dense_lookup(tm, states.data(), n, t, lp.data(), valid.data());
  else vntk_sparse<double>(tm, states.data(), n, t, lp.data(), nullptr, nullptr, valid.data());
  CHECK(got.valid == valid);
  for (int32_t g = 0; g < groups; ++g) {
    CAPTURE(g);
    const auto want = topk_candidates(lp.data() + static_cast<size_t>(g) * M * V, M, V, scores.data() + static_cast<size_t>(g) * M, k);
    REQUIRE(got.count[static_cast<size_t>(g)] == static_cast<int32_t>(want.size()));
    for (int32_t j = 0; j < k; ++j) {
      CAPTURE(j);
      const size_t o = static_cast<size_t>(g) * k + static_cast<size_t>(j);
      if (j < static_cast<int32_t>(want.size())) {
        const int64_t flat = want[static_cast<size_t>(j)].flat + int64_t{g} * M * V;
        REQUIRE(got.flat[o] == flat);
        CHECK(close(got.score[o], want[static_cast<size_t>(j)].score));
        CHECK(got.next[o] == static_next_state(tm, states[static_cast<size_t>(flat / V)], static_cast<int32_t>(flat % V), t));
      } else {
        CHECK(got.flat[o] == -1);
        CHECK(got.next[o] == -1);
        CHECK(got.score[o] == 0.0);
      }
    }
  }
  if (got_out) *got_out = got;
}

}  // namespace

TEST_CASE("static step: candidates-only ranking equals the full-vocabulary path", "[constraint][static_step]") {
  const CsrLayout layout = GENERATE(CsrLayout::stacked, CsrLayout::compact);
  const int32_t d = GENERATE(0, 1, 2);
  const int32_t V = GENERATE(5, 40, 300, 2048);
  const int32_t M = GENERATE(1, 4, 70);
  if (d == 2 && V == 2048 && layout == CsrLayout::stacked && M != 70) return;  // the 16 MB state table once is enough
  const uint64_t seed = testing::test_seed(static_cast<uint64_t>(V) * 1000 + static_cast<uint64_t>(M) * 10 + static_cast<uint64_t>(d) * 2 +
                                           (layout == CsrLayout::compact));
  CAPTURE(testing::base_seed(), seed, csr_layout_name(layout), d, V, M);
  std::mt19937_64 rng(seed);
  const int32_t L = std::uniform_int_distribution<int32_t>(3, 6)(rng);
  const int64_t items = testing::random_item_count(rng, 20000, V, L);
  const ConstraintSet c = constraint_set_random(items, L, V, rng());
  const TransitionMatrix tm = TransitionMatrix::build(c, {d, layout});
  const int32_t groups = 2, n = groups * M;
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (int32_t t = 0; t <= L; ++t) {  // t = L: past the last level, nothing is allowed
    const int32_t k = std::uniform_int_distribution<int32_t>(1, 2 * M)(rng);
    CAPTURE(t, L, items, k);
    std::vector<float> logits(static_cast<size_t>(n) * V);
    for (auto& x : logits) x = g(rng);
    for (int32_t i = 0; i < n * V / 50; ++i) logits[rng() % logits.size()] = -std::numeric_limits<float>::infinity();  // masked by the model
    std::vector<int64_t> states = testing::random_static_states(c, tm, n, std::min(t, L), rng, true);
    std::vector<double> scores(static_cast<size_t>(n));
    for (auto& x : scores) x = -std::uniform_real_distribution<double>(0.0, 4.0)(rng);
    std::sort(scores.begin(), scores.begin() + M, std::greater<>());  // beams arrive best first, as after a step
    if (n >= 6) {
      scores[5] = kNegInf;  // a beam that is not live
      // an exact tie across rows: row n-1 repeats row 0 (logits, state, score)
      std::copy(logits.begin(), logits.begin() + V, logits.end() - V);
      states.back() = states.front();
      scores.back() = scores.front();
    }
    check_step(tm, logits, states, scores, groups, k, t);
  }
}

// Small k keeps T close to the final k-th best from the first rows on, so
// the dense levels' pruning bound decides: a bound too tight by a fraction
// of a nat drops winners here.
TEST_CASE("static step: the dense pruning bound drops no winner", "[constraint][static_step]") {
  const int32_t k = GENERATE(1, 2, 5);
  const CsrLayout layout = GENERATE(CsrLayout::stacked, CsrLayout::compact);
  const uint64_t seed = testing::test_seed(static_cast<uint64_t>(k) * 2 + (layout == CsrLayout::compact));
  CAPTURE(testing::base_seed(), seed, k, csr_layout_name(layout));
  std::mt19937_64 rng(seed);
  const int32_t V = 512, M = 70, n = 2 * M;
  const ConstraintSet c = constraint_set_random(60000, 4, V, rng());
  const TransitionMatrix tm = TransitionMatrix::build(c, {2, layout});
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int32_t t = 0; t < 2; ++t)
    for (int rep = 0; rep < 4; ++rep) {
      CAPTURE(t, rep);
      std::vector<float> logits(static_cast<size_t>(n) * V);
      for (auto& x : logits) x = g(rng);
      const std::vector<int64_t> states = testing::random_static_states(c, tm, n, t, rng);
      std::vector<double> scores(static_cast<size_t>(n));
      for (auto& x : scores) x = -std::uniform_real_distribution<double>(0.0, 0.05)(rng);
      check_step(tm, logits, states, scores, 2, k, t);
    }
}

// Engines that mask with a huge finite logit (float's lowest, or -1e18 and
// the like) instead of -inf: allowed tokens down there are still ranked as
// the full-vocabulary path ranks them, on every normaliser path, while the
// disallowed ones keep the row's maximum far above.
TEST_CASE("static step: allowed logits at or below -1e18 are ranked, not dropped", "[constraint][static_step]") {
  const float masks[] = {-1e18f, -3e18f, -1e20f, -1e30f, std::numeric_limits<float>::lowest()};
  const int32_t d = GENERATE(1, 2);
  std::mt19937_64 rng(testing::test_seed(static_cast<uint64_t>(d)));
  CAPTURE(testing::base_seed(), d);
  const int32_t V = 96, M = 6, n = 2 * M;
  const ConstraintSet c = constraint_set_random(400, 3, V, rng());
  const TransitionMatrix tm = TransitionMatrix::build(c, {d, CsrLayout::compact});
  std::normal_distribution<float> g(0.0f, 2.0f);
  for (const char* path : {"best", "avx2", "portable"}) {
    if (!log_normaliser_use(path)) continue;
    for (int32_t t = 0; t < d; ++t)
      for (int rep = 0; rep < 6; ++rep) {
        CAPTURE(path, t, rep);
        std::vector<float> logits(static_cast<size_t>(n) * V);
        for (auto& x : logits) x = g(rng);
        // Most rows far down: some with a few ordinary logits left (the row's
        // maximum stays near 0), some wholly down there (every token's
        // log-prob ordinary again, the maximum itself near -1e18).
        for (int32_t i = 0; i < n; ++i) {
          const uint64_t kind = rng() % 4;
          if (kind == 0) continue;
          const float base = masks[rng() % std::size(masks)];
          for (int32_t v = 0; v < V; ++v)
            if (kind == 1 || rng() % 8 != 0) logits[static_cast<size_t>(i) * V + v] = kind == 1 ? base : base * (1.0f + 1e-3f * static_cast<float>(rng() % 5));
        }
        const std::vector<int64_t> states = testing::random_static_states(c, tm, n, t, rng);
        std::vector<double> scores(static_cast<size_t>(n));
        for (auto& x : scores) x = -std::uniform_real_distribution<double>(0.0, 3.0)(rng);
        const int32_t k = std::uniform_int_distribution<int32_t>(1, 2 * M)(rng);
        CAPTURE(k);
        check_step(tm, logits, states, scores, 2, k, t);
      }
  }
  log_normaliser_use("best");
}

TEST_CASE("static step: every normaliser path gives the same step bit for bit", "[constraint][static_step]") {
  std::mt19937_64 rng(5);
  const ConstraintSet c = constraint_set_random(5000, 5, 300, 9);
  for (int32_t d : {0, 2}) {
    const TransitionMatrix tm = TransitionMatrix::build(c, {d, CsrLayout::compact});
    const int32_t n = 2 * 16;
    std::normal_distribution<float> g(0.0f, 3.0f);
    for (int32_t t = 0; t < 5; ++t) {
      CAPTURE(d, t, log_normaliser_isa());
      std::vector<float> logits(static_cast<size_t>(n) * 300);
      for (auto& x : logits) x = g(rng);
      const std::vector<int64_t> states = testing::random_static_states(c, tm, n, t, rng);
      const std::vector<double> scores(static_cast<size_t>(n), 0.0);
      StaticStep step(tm);
      StaticStepResult a, b;
      step.run(logits.data(), states.data(), scores.data(), n, 2, 20, t, a);
      for (const char* path : {"portable", "avx2"}) {
        CAPTURE(path);
        if (!log_normaliser_use(path)) continue;
        step.run(logits.data(), states.data(), scores.data(), n, 2, 20, t, b);
        CHECK(a.flat == b.flat);
        CHECK(a.score == b.score);
        CHECK(a.next == b.next);
      }
      log_normaliser_use("best");
    }
  }
}

TEST_CASE("static step: bad input is refused by name", "[constraint][static_step]") {
  const ConstraintSet c = constraint_set_random(100, 3, 16, 1);
  const TransitionMatrix tm = TransitionMatrix::build(c, {1, CsrLayout::stacked});
  StaticStep step(tm);
  StaticStepResult r;
  std::vector<float> logits(4 * 16, 0.0f);
  const std::vector<int64_t> states = {0, 0, 0, 0};
  const std::vector<double> scores(4, 0.0);
  CHECK_THROWS_WITH(step.run(logits.data(), states.data(), scores.data(), 4, 3, 2, 0, r), Catch::Contains("do not split into 3 groups"));
  CHECK_THROWS_WITH(step.run(logits.data(), states.data(), scores.data(), 4, 1, 0, 0, r), Catch::Contains("k = 0"));
  CHECK_THROWS_WITH(step.run(logits.data(), states.data(), scores.data(), 4, 1, 2, -1, r), Catch::Contains("step -1"));
  logits[16 * 2 + 5] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(step.run(logits.data(), states.data(), scores.data(), 4, 1, 2, 0, r), Catch::Contains("static step: logit 5 is NaN"));
}

// The authors' decoder, with fewer valid continuations than beams, leaves
// the next CSR row's tokens in its unused slots and emits ids outside C
// (Figure 1, batch 2 x beam 4: 60 of 80 ids in C over 10 seeds,
// bench/static_peer_bench.py --figure1). Here an unused slot is (|V|, 0)
// (vntk_sparse's sanitisation, tested in test_transition_matrix.cpp) and a
// beam without a candidate dies, so every live beam is an id of C.
TEST_CASE("static decode: with fewer ids than beams every output is in C", "[constraint][static_step]") {
  auto check = [](const ConstraintSet& c, int32_t d, CsrLayout layout, int32_t beams, uint64_t seed) {
    CAPTURE(c.size(), d, csr_layout_name(layout), beams, seed);
    const TransitionMatrix tm = TransitionMatrix::build(c, {d, layout});
    const int32_t V = c.vocab_size, L = c.length, groups = 2;
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> g(0.0f, 3.0f);
    std::vector<float> logits(static_cast<size_t>(L) * groups * beams * V);
    for (auto& x : logits) x = g(rng);
    const StaticDecodeResult r = static_decode(tm, groups, beams, [&](int32_t t, int32_t q, int32_t j) {
      return logits.data() + ((static_cast<size_t>(t) * groups + static_cast<size_t>(q)) * beams + static_cast<size_t>(j)) * V;
    });
    for (int32_t q = 0; q < groups; ++q) {
      std::set<std::vector<int32_t>> seen;
      int32_t live = 0;
      for (int32_t j = 0; j < beams; ++j) {
        const size_t b = static_cast<size_t>(q) * beams + static_cast<size_t>(j);
        const std::vector<int32_t> id(r.tokens.begin() + static_cast<std::ptrdiff_t>(b) * L, r.tokens.begin() + static_cast<std::ptrdiff_t>(b + 1) * L);
        if (r.states[b] == kDeadState) {
          CHECK(r.scores[b] == kNegInf);
          CHECK(id == std::vector<int32_t>(static_cast<size_t>(L), -1));
          continue;
        }
        ++live;
        CHECK(j == live - 1);  // live beams first
        CHECK(c.contains(id));
        CHECK(seen.insert(id).second);
        CHECK(std::isfinite(r.scores[b]));
      }
      CHECK(live == r.live[static_cast<size_t>(q)]);
      if (c.size() <= beams) CHECK(live == c.size());  // every id fits: beam search keeps them all
      else CHECK(live >= 1);
    }
  };
  // Figure 1 of the paper: 3 ids, 4 beams.
  const ConstraintSet fig1 = constraint_set_read(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/static_figure1.txt", "text", 4);
  for (int32_t d : {0, 1, 2})
    for (CsrLayout layout : {CsrLayout::stacked, CsrLayout::compact}) check(fig1, d, layout, 4, 3);
  // Random small sets, 8 beams: every level narrower than the beam.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const ConstraintSet c = constraint_set_random(static_cast<int64_t>(seed) + 1, 4, 16, seed);
    check(c, static_cast<int32_t>(seed % 3), seed % 2 ? CsrLayout::stacked : CsrLayout::compact, 8, seed);
  }
}
