// The fused STATIC step's index arithmetic (cuda/static/static_step_index.h) on the
// CPU: composed the way static_row_kernel / static_merge_kernel compose it
// (one row at a time, slot by slot, then the per-row best k and the per-group
// merge), over host copies of the arrays, and checked against core's
// independent reference (vntk_sparse, dense_lookup, static_next_state,
// log_softmax_row, topk_candidates). Runs everywhere; the kernel itself is
// checked against the same reference in test_static_step.cpp (device only).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"
#include "cuda/static/static_constraint_cuda.h"
#include "cuda/static/static_step_index.h"
#include "test_util.h"

using namespace triescope;
using triescope::cuda::StaticMatrixView;

namespace {

struct RowOut {
  int32_t count = 0;
  std::vector<int32_t> slot_tok;   // sparse: [B_t] sanitised tokens (V when invalid)
  std::vector<int64_t> slot_next;  // sparse: [B_t] sanitised next states (0 when invalid)
  std::vector<ScoredCandidate> best;  // the row's best min(k, count)
  std::vector<int64_t> best_next;
};

// static_row_kernel for one row, sequentially: projection into `row` (the
// log-probs, in place), valid count, sanitised slice, best k with next states.
RowOut row_step(const StaticMatrixView& m, int64_t s, int32_t step, int32_t r, double bs, int32_t k, double* row) {
  using namespace triescope::cuda;
  RowOut o;
  const int32_t V = m.vocab;
  const bool live = step >= 0 && step < m.length && s >= -1 && s < m.num_states;
  const bool dense = live && step < m.dense_levels, sparse = live && !dense;
  const uint64_t* bits = dense ? step_dense_row(m, s, step) : nullptr;
  int64_t start = 0, len = 0;
  int32_t Bt = 0;
  if (sparse) {
    const int64_t rr = step_row(m, s);
    start = step_row_begin(m, rr);
    len = step_row_end(m, rr) - start;
    Bt = m.max_branch[step];
  }
  const int32_t slots = static_cast<int32_t>(std::min<int64_t>(len, Bt));
  o.count = sparse ? slots : 0;
  if (bits) {
    o.count = 0;
    for (int32_t w = 0; w < m.words_per_row; ++w) o.count += popcount64(bits[w]);
  }
  std::vector<double> lp(row, row + V);
  for (int32_t v = 0; v < V; ++v) row[v] = (bits && step_bit(bits, v)) ? lp[static_cast<size_t>(v)] : -std::numeric_limits<double>::infinity();
  for (int32_t kk = 0; kk < Bt; ++kk) {
    const int32_t raw = step_edge_token(m, start + kk);
    const int64_t raw_next = step_edge_next(m, start + kk);
    const int32_t tok = kk < len ? raw : V;
    o.slot_tok.push_back(tok);
    o.slot_next.push_back(kk < len ? raw_next : 0);
    if (tok < V) row[tok] = lp[static_cast<size_t>(tok)];
  }
  // Candidates with their payload (token or slot), then the best min(k, count) in topk order.
  struct C {
    ScoredCandidate c;
    int32_t aux;
  };
  std::vector<C> cands;
  if (bits)
    for (int32_t v = 0; v < V; ++v) {
      if (step_bit(bits, v)) cands.push_back({{bs + lp[static_cast<size_t>(v)], int64_t{r} * V + v}, v});
    }
  else
    for (int32_t kk = 0; kk < slots; ++kk) {
      const int32_t tok = step_edge_token(m, start + kk);
      cands.push_back({{bs + lp[static_cast<size_t>(tok)], int64_t{r} * V + tok}, kk});
    }
  std::sort(cands.begin(), cands.end(), [](const C& a, const C& b) { return a.c.score > b.c.score || (a.c.score == b.c.score && a.c.flat < b.c.flat); });
  for (int32_t j = 0; j < std::min<int32_t>(k, o.count); ++j) {
    const C& c = cands[static_cast<size_t>(j)];
    o.best.push_back(c.c);
    o.best_next.push_back(bits ? step_dense_next(m, s, step, c.aux) : step_edge_next(m, start + c.aux));
  }
  return o;
}

}  // namespace

TEST_CASE("static step index: kernel arithmetic composed on the CPU equals core's VNTK, dense lookup, next states and top-k",
          "[cuda][constraint]") {
  const CsrLayout layout = GENERATE(CsrLayout::stacked, CsrLayout::compact);
  const int32_t d = GENERATE(0, 1, 2);
  const int32_t V = GENERATE(5, 40, 300, 2048);
  const uint64_t variant = GENERATE(range(0, 3));
  const uint64_t seed = testing::test_seed(variant * 1000 + static_cast<uint64_t>(V) * 10 + static_cast<uint64_t>(d) * 2 + (layout == CsrLayout::compact));
  CAPTURE(testing::base_seed(), seed, csr_layout_name(layout), d, V);
  std::mt19937_64 rng(seed);
  const int32_t L = std::uniform_int_distribution<int32_t>(3, 5)(rng);
  const int64_t items = testing::random_item_count(rng, V == 2048 ? 4000 : 700, V, L);
  const ConstraintSet c = constraint_set_random(items, L, V, rng());
  const TransitionMatrix tm = TransitionMatrix::build(c, {d, layout});
  const StaticMatrixView m = cuda::static_matrix_host_view(tm);
  const int32_t groups = std::uniform_int_distribution<int32_t>(1, 3)(rng), M = std::uniform_int_distribution<int32_t>(1, 6)(rng);
  const int32_t n = groups * M, k = std::uniform_int_distribution<int32_t>(1, 2 * M)(rng);
  CAPTURE(L, items, groups, M, k);
  std::normal_distribution<float> g(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(n) * V);
  for (auto& x : logits) x = g(rng);
  std::vector<double> scores(static_cast<size_t>(n));
  for (auto& x : scores) x = -std::uniform_real_distribution<double>(0.0, 4.0)(rng);

  for (int32_t t = 0; t < L; ++t) {
    CAPTURE(t);
    const std::vector<int64_t> states = testing::random_static_states(c, tm, n, t, rng);

    std::vector<double> lp(logits.size()), mine(logits.size());
    for (int32_t i = 0; i < n; ++i) log_softmax_row(logits.data() + static_cast<size_t>(i) * V, V, lp.data() + static_cast<size_t>(i) * V);
    mine = lp;
    std::vector<RowOut> rows;
    for (int32_t i = 0; i < n; ++i)
      rows.push_back(row_step(m, states[static_cast<size_t>(i)], t, i, scores[static_cast<size_t>(i)], k, mine.data() + static_cast<size_t>(i) * V));

    // Reference: core.
    std::vector<int32_t> valid(static_cast<size_t>(n));
    const int32_t Bt = tm.max_branch[static_cast<size_t>(t)];
    std::vector<int32_t> ctok(static_cast<size_t>(n) * Bt);
    std::vector<int64_t> cnext(static_cast<size_t>(n) * Bt);
    if (t < d) dense_lookup(tm, states.data(), n, t, lp.data(), valid.data());
    else vntk_sparse<double>(tm, states.data(), n, t, lp.data(), ctok.data(), cnext.data(), valid.data());
    CHECK(mine == lp);  // same values, same -inf: bit-identical projection
    for (int32_t i = 0; i < n; ++i) {
      CAPTURE(i, states[static_cast<size_t>(i)]);
      CHECK(rows[static_cast<size_t>(i)].count == valid[static_cast<size_t>(i)]);
      if (t >= d) {
        CHECK(rows[static_cast<size_t>(i)].slot_tok == std::vector<int32_t>(ctok.begin() + i * Bt, ctok.begin() + (i + 1) * Bt));
        CHECK(rows[static_cast<size_t>(i)].slot_next == std::vector<int64_t>(cnext.begin() + i * Bt, cnext.begin() + (i + 1) * Bt));
      }
      // Every allowed token's next state, through the kernel's arithmetic.
      for (int32_t v = 0; v < V; ++v) {
        if (std::isinf(lp[static_cast<size_t>(i) * V + static_cast<size_t>(v)])) continue;
        int64_t got = kDeadState;
        if (t < d) {
          got = cuda::step_dense_next(m, states[static_cast<size_t>(i)], t, v);
        } else {
          for (int32_t kk = 0; kk < Bt; ++kk)
            if (rows[static_cast<size_t>(i)].slot_tok[static_cast<size_t>(kk)] == v) got = rows[static_cast<size_t>(i)].slot_next[static_cast<size_t>(kk)];
        }
        CHECK(got == static_next_state(tm, states[static_cast<size_t>(i)], v, t));
      }
    }
    // static_merge_kernel: per group, a k-way merge of the rows' ordered
    // winners (a cursor per row, the best head each round) equals core's top-k.
    for (int32_t gi = 0; gi < groups; ++gi) {
      CAPTURE(gi);
      std::vector<std::pair<ScoredCandidate, int64_t>> pool;
      std::vector<size_t> cursor(static_cast<size_t>(M), 0);
      const auto better = [](const ScoredCandidate& a, const ScoredCandidate& b) {
        return a.score > b.score || (a.score == b.score && a.flat < b.flat);
      };
      for (int32_t j = 0; j < k; ++j) {
        int32_t best = -1;
        for (int32_t i = 0; i < M; ++i) {
          const RowOut& ro = rows[static_cast<size_t>(gi * M + i)];
          if (cursor[static_cast<size_t>(i)] >= ro.best.size()) continue;  // the kernel's -1 padding
          if (best < 0 || better(ro.best[cursor[static_cast<size_t>(i)]],
                                 rows[static_cast<size_t>(gi * M + best)].best[cursor[static_cast<size_t>(best)]]))
            best = i;
        }
        if (best < 0) break;
        const RowOut& ro = rows[static_cast<size_t>(gi * M + best)];
        pool.push_back({ro.best[cursor[static_cast<size_t>(best)]], ro.best_next[cursor[static_cast<size_t>(best)]]});
        ++cursor[static_cast<size_t>(best)];
      }
      auto want = topk_candidates(lp.data() + static_cast<size_t>(gi) * M * V, M, V, scores.data() + static_cast<size_t>(gi) * M, k);
      REQUIRE(pool.size() == want.size());
      for (size_t j = 0; j < want.size(); ++j) {
        CAPTURE(j);
        CHECK(pool[j].first.flat == want[j].flat + int64_t{gi} * M * V);
        CHECK(pool[j].first.score == want[j].score);
        const int64_t row = pool[j].first.flat / V;
        CHECK(pool[j].second == static_next_state(tm, states[static_cast<size_t>(row)], static_cast<int32_t>(pool[j].first.flat % V), t));
      }
    }
  }
}
