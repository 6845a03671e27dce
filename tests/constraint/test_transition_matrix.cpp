#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "core/constraint/baselines.h"
#include "core/constraint/static_constraint.h"
#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"

using namespace triescope;

namespace {

ConstraintSet figure1() { return constraint_set_parse_text("1 2 1\n3 1 2\n3 1 3\n", 4, "figure1"); }

// F_t from the definition (Sec. 4.1), by scanning the set: the tokens v such
// that prefix + v is a prefix of some id. Independent of every index.
std::set<int32_t> brute_valid(const ConstraintSet& c, const std::vector<int32_t>& prefix) {
  std::set<int32_t> out;
  const size_t t = prefix.size();
  if (t >= static_cast<size_t>(c.length)) return out;
  for (int64_t i = 0; i < c.size(); ++i)
    if (std::equal(prefix.begin(), prefix.end(), c.item(i))) out.insert(c.item(i)[t]);
  return out;
}

}  // namespace

TEST_CASE("transition matrix: the paper's Figure 1 arrays (stacked CSR)", "[constraint]") {
  const auto tm = TransitionMatrix::build(figure1(), {0, CsrLayout::stacked});
  // Breadth-first: 0 root; 1 A1, 2 A3; 3 B2 (under A1), 4 B1 (under A3); 5 C1, 6 C2, 7 C3.
  CHECK(tm.row_ptr == std::vector<int32_t>{0, 2, 3, 4, 5, 7, 7, 7, 7});
  std::vector<int32_t> C, Vv;
  for (int64_t e = 0; e < tm.num_edges(); ++e) {
    C.push_back(tm.edges[static_cast<size_t>(e) * 2]);
    Vv.push_back(tm.edges[static_cast<size_t>(e) * 2 + 1]);
  }
  CHECK(C == std::vector<int32_t>{1, 3, 2, 1, 1, 2, 3});
  CHECK(Vv == std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7});
  // Sec. 4.2.1: row_start = P[4] = 5, row_end = P[5] = 7, C[5:7] = [2, 3], V[5:7] = [6, 7].
  CHECK(tm.row_ptr[4] == 5);
  CHECK(tm.row_ptr[5] == 7);
  CHECK(std::vector<int32_t>(C.begin() + 5, C.begin() + 7) == std::vector<int32_t>{2, 3});
  CHECK(std::vector<int32_t>(Vv.begin() + 5, Vv.begin() + 7) == std::vector<int32_t>{6, 7});
  CHECK(tm.max_branch == std::vector<int32_t>{2, 1, 2});
  CHECK(tm.level_start == std::vector<int64_t>{0, 1, 3, 5, 8});
}

TEST_CASE("transition matrix: compact layout reads the same rows, tokens and next states", "[constraint]") {
  const auto seed = GENERATE(11u, 12u, 13u);
  const int32_t d = GENERATE(0, 1, 2);
  CAPTURE(seed, d);
  const auto c = constraint_set_random(400, 5, 12, seed);
  const auto a = TransitionMatrix::build(c, {d, CsrLayout::stacked});
  const auto b = TransitionMatrix::build(c, {d, CsrLayout::compact});
  REQUIRE(a.num_states() == b.num_states());
  CHECK(a.max_branch == b.max_branch);
  for (int64_t s = 0; s < a.num_states(); ++s) {
    CAPTURE(s);
    REQUIRE(a.row_begin(s) == b.row_begin(s));
    REQUIRE(a.row_end(s) == b.row_end(s));
  }
  for (int64_t e = 0; e < a.num_edges(); ++e) {
    REQUIRE(a.edge_token(e) == b.edge_token(e));
    REQUIRE(a.edge_next(e) == b.edge_next(e));
  }
  // The stacked dense state table and the compact rank agree on every bit.
  for (int32_t t = 0; t < 12; ++t) CHECK(static_next_state(a, 0, t, 0) == static_next_state(b, 0, t, 0));
  CHECK(a.memory().total() > b.memory().total());
}

TEST_CASE("transition matrix: bad options are named", "[constraint]") {
  const auto c = figure1();
  CHECK_THROWS_WITH(TransitionMatrix::build(c, {3, CsrLayout::stacked}), Catch::Contains("dense_levels must be 0, 1 or 2, got 3"));
  const auto c2 = constraint_set_parse_text("1 2\n", 4, "two");
  CHECK_THROWS_WITH(TransitionMatrix::build(c2, {2, CsrLayout::stacked}), Catch::Contains("dense_levels 2 must be < L = 2"));
  CHECK_THROWS_WITH(csr_layout_parse("csc", "x.json: constraint.layout"), Catch::Contains("x.json: constraint.layout must be \"stacked\" or \"compact\", got \"csc\""));
}

TEST_CASE("exact indexes agree: masks and next states on random sets and beams", "[constraint]") {
  const uint64_t seed = GENERATE(range(1u, 9u));
  const int32_t V = GENERATE(5, 40, 300);
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(V));
  const int32_t L = 3 + static_cast<int32_t>(rng() % 3);
  const int64_t items = 1 + static_cast<int64_t>(rng() % 600);
  double space = std::pow(V, L);
  const int64_t n_items = std::min<int64_t>(items, static_cast<int64_t>(space / 2) + 1);
  CAPTURE(seed, V, L, n_items);
  auto set = std::make_shared<const ConstraintSet>(constraint_set_random(n_items, L, V, seed));

  std::vector<std::shared_ptr<ConstraintIndex>> idx;
  for (auto layout : {CsrLayout::stacked, CsrLayout::compact})
    for (int32_t d = 0; d <= 2; ++d) idx.push_back(constraint_index_make("vntk", set, {d, layout}));
  idx.push_back(constraint_index_make("pointer_trie", set, {}));
  idx.push_back(constraint_index_make("ppv_exact", set, {}));
  auto approx = constraint_index_make("ppv_approx", set, {}, 3);
  auto hash = std::make_shared<HashBitmapIndex>(*set, 10, 3);
  int64_t hash_fp = 0, hash_neg = 0;

  const int32_t n = 7;  // beams per step
  for (int32_t t = 0; t <= L; ++t) {
    // Beams: prefixes of random ids (t == L: complete ids, every token invalid).
    std::vector<std::vector<int32_t>> prefixes;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t* it = set->item(static_cast<int64_t>(rng() % static_cast<uint64_t>(set->size())));
      prefixes.emplace_back(it, it + t);
    }
    std::uniform_real_distribution<double> u(-12.0, 0.0);
    std::vector<double> lp0(static_cast<size_t>(n) * V);
    for (auto& x : lp0) x = u(rng);

    auto states_of = [&](ConstraintIndex& ix) {
      std::vector<int64_t> st;
      for (auto& p : prefixes) {
        int64_t s = ix.root_state();
        for (int32_t j = 0; j < t; ++j) s = ix.next_state(s, p[static_cast<size_t>(j)], j);
        st.push_back(s);
      }
      return st;
    };
    for (size_t k = 0; k < idx.size(); ++k) {
      auto& ix = *idx[k];
      CAPTURE(t, ix.name());
      const auto st = states_of(ix);
      std::vector<double> lp = lp0;
      std::vector<int32_t> valid(static_cast<size_t>(n));
      ix.mask(st.data(), n, t, lp.data(), valid.data(), nullptr);
      // the float instantiation (the benchmark's) masks the same tokens
      std::vector<float> lpf(lp0.begin(), lp0.end());
      std::vector<int32_t> validf(static_cast<size_t>(n));
      ix.mask(st.data(), n, t, lpf.data(), validf.data(), nullptr);
      REQUIRE(validf == valid);
      for (size_t k2 = 0; k2 < lp.size(); ++k2) REQUIRE(std::isinf(lpf[k2]) == std::isinf(lp[k2]));
      for (int32_t i = 0; i < n; ++i) {
        CAPTURE(i);
        const auto want = brute_valid(*set, prefixes[static_cast<size_t>(i)]);
        CHECK(valid[static_cast<size_t>(i)] == static_cast<int32_t>(want.size()));
        CHECK(ix.canonical_state(st[static_cast<size_t>(i)], t) == idx[0]->canonical_state(states_of(*idx[0])[static_cast<size_t>(i)], t));
        for (int32_t v = 0; v < V; ++v) {
          const double got = lp[static_cast<size_t>(i) * V + v];
          if (want.count(v)) {
            REQUIRE(got == lp0[static_cast<size_t>(i) * V + v]);
            // the next state names the same trie node in every implementation
            if (t < L)
              REQUIRE(ix.canonical_state(ix.next_state(st[static_cast<size_t>(i)], v, t), t + 1) ==
                      idx[0]->canonical_state(idx[0]->next_state(states_of(*idx[0])[static_cast<size_t>(i)], v, t), t + 1));
          } else {
            REQUIRE(std::isinf(got));
            REQUIRE(got < 0);
          }
        }
      }
    }
    {  // PPV approximate: exactly the valid tokens among the top-k, no others.
      const auto st = states_of(*approx);
      std::vector<double> lp = lp0;
      approx->mask(st.data(), n, t, lp.data(), nullptr, nullptr);
      for (int32_t i = 0; i < n; ++i) {
        std::vector<int32_t> order(static_cast<size_t>(V));
        for (int32_t v = 0; v < V; ++v) order[static_cast<size_t>(v)] = v;
        const double* row = lp0.data() + static_cast<size_t>(i) * V;
        std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
        const std::set<int32_t> top(order.begin(), order.begin() + std::min(3, V));
        const auto want = brute_valid(*set, prefixes[static_cast<size_t>(i)]);
        for (int32_t v = 0; v < V; ++v) {
          CAPTURE(t, i, v);
          const bool kept = !std::isinf(lp[static_cast<size_t>(i) * V + v]);
          REQUIRE(kept == (want.count(v) && top.count(v)));
        }
      }
    }
    {  // Hash bitmap: never a false negative; false positives counted.
      const auto st = states_of(*hash);
      std::vector<double> lp = lp0;
      hash->mask(st.data(), n, t, lp.data(), nullptr, nullptr);
      for (int32_t i = 0; i < n; ++i) {
        const auto want = brute_valid(*set, prefixes[static_cast<size_t>(i)]);
        for (int32_t v = 0; v < V; ++v) {
          const bool kept = !std::isinf(lp[static_cast<size_t>(i) * V + v]);
          if (want.count(v)) REQUIRE(kept);
          else {
            ++hash_neg;
            hash_fp += kept;
          }
        }
      }
    }
  }
  // The documented error: a Bloom filter's rate, (1 - e^{-kn/m})^k ~ 1.7% at
  // 10 bits and 3 hashes per prefix; a loose bound that a broken hash fails.
  CAPTURE(hash_fp, hash_neg, hash->expected_false_positive_rate());
  CHECK(static_cast<double>(hash_fp) <= 0.08 * static_cast<double>(hash_neg) + 3.0);
}

TEST_CASE("VNTK: speculative slice outputs (Alg. 2) hold exactly the row's candidates", "[constraint]") {
  const auto c = figure1();
  for (auto layout : {CsrLayout::stacked, CsrLayout::compact}) {
    CAPTURE(csr_layout_name(layout));
    const auto tm = TransitionMatrix::build(c, {0, layout});
    // Node 4 (B1 under A3) at step 2: B_2 = 2 slots, both valid: tokens [2, 3] -> states [6, 7].
    const int64_t states[2] = {4, 3};
    std::vector<float> lp(8, -1.0f);
    std::vector<int32_t> toks(4), valid(2);
    std::vector<int64_t> next(4);
    vntk_sparse<float>(tm, states, 2, 2, lp.data(), toks.data(), next.data(), valid.data());
    CHECK(toks == std::vector<int32_t>{2, 3, 1, 4});   // beam 1 (node 3) has one child; its second slot is the dummy |V|
    CHECK(next == std::vector<int64_t>{6, 7, 5, 0});   // sanitised to 0 (Alg. 2 line 16)
    CHECK(valid == std::vector<int32_t>{2, 1});
    CHECK(std::isinf(lp[0]));
    CHECK(std::isinf(lp[1]));
    CHECK(lp[2] == -1.0f);
    CHECK(lp[3] == -1.0f);
    CHECK(lp[5] == -1.0f);
    CHECK(std::isinf(lp[6]));
  }
}

TEST_CASE("transition matrix: |V| > 65536 stores 32-bit tokens in the compact layout", "[constraint]") {
  const int32_t d = GENERATE(0, 1);
  const uint64_t seed = GENERATE(5u, 6u);
  CAPTURE(d, seed);
  const int32_t V = 70000;
  auto set = std::make_shared<const ConstraintSet>(constraint_set_random(300, 3, V, seed));
  const auto a = TransitionMatrix::build(*set, {d, CsrLayout::stacked});
  const auto b = TransitionMatrix::build(*set, {d, CsrLayout::compact});
  CHECK(b.cols16.empty());
  REQUIRE(b.cols32.size() == static_cast<size_t>(b.num_edges()));
  for (int64_t e = 0; e < a.num_edges(); ++e) REQUIRE(a.edge_token(e) == b.edge_token(e));
  VntkIndex ia(std::make_shared<const TransitionMatrix>(a)), ib(std::make_shared<const TransitionMatrix>(b));
  for (int64_t i = 0; i < set->size(); i += 7) {
    int64_t sa = 0, sb = 0;
    for (int32_t t = 0; t < 3; ++t) {
      sa = ia.next_state(sa, set->item(i)[t], t);
      sb = ib.next_state(sb, set->item(i)[t], t);
      REQUIRE(sa == sb);
      REQUIRE(sa != kDeadState);
    }
  }
  CHECK_THROWS_WITH(TransitionMatrix::build(*set, {2, CsrLayout::stacked}), Catch::Contains("needs"));
}
