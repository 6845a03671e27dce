// Shared helpers for the CUDA tests: fresh seeds, random forests, device
// upload/download with poisoning. Seeds are fresh each run unless
// TRIESCOPE_TEST_SEED is set; every test CAPTUREs the seed it used.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/constraint/constraint_index.h"
#include "core/constraint/constraint_set.h"
#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"
#include "core/tree/token_tree.h"

namespace triescope::testing {

inline uint64_t base_seed() {
  static const uint64_t s = [] {
    if (const char* e = std::getenv("TRIESCOPE_TEST_SEED")) return static_cast<uint64_t>(std::strtoull(e, nullptr, 10));
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  return s;
}
// A distinct seed per GENERATE'd variant; print it to reproduce with TRIESCOPE_TEST_SEED=<base>.
inline uint64_t test_seed(uint64_t variant) { return base_seed() + 0x9e3779b97f4a7c15ull * (variant + 1); }

// A random constraint-set size in [1, most], capped at half of the |V|^L
// sequences; the cap is computed in double (|V|^L overflows int64 at
// |V| = 40000, L = 5, and the cast of an out-of-range double is undefined).
inline int64_t random_item_count(std::mt19937_64& rng, int64_t most, int32_t V, int32_t L) {
  const int64_t drawn = std::uniform_int_distribution<int64_t>(1, most)(rng);
  const double half_space = std::pow(double(V), double(L)) / 2;
  return double(drawn) <= half_space ? drawn : std::max<int64_t>(1, static_cast<int64_t>(half_space));
}

// A random forest of `num_nodes` nodes: `num_roots` roots (random starting
// depths when `root_depths`), every other node under a random earlier node.
// Slots are distinct, drawn from [0, num_slots); a node holds none with
// probability `p_noslot` (collected or never written).
inline TokenTree random_forest(std::mt19937_64& rng, int32_t num_nodes, int32_t num_roots, int32_t num_slots, double p_noslot,
                               bool root_depths) {
  TokenTree t;
  std::uniform_int_distribution<int32_t> tok(0, 999);
  for (int32_t i = 0; i < num_nodes; ++i) {
    if (i < num_roots) {
      t.add_root(tok(rng), root_depths ? std::uniform_int_distribution<int32_t>(0, 50)(rng) : 0);
    } else {
      // bias towards recent nodes so chains get deep
      const int32_t lo = std::max<int32_t>(0, i - 1 - std::uniform_int_distribution<int32_t>(0, 8)(rng));
      const int32_t parent = std::bernoulli_distribution(0.7)(rng) ? lo : std::uniform_int_distribution<int32_t>(0, i - 1)(rng);
      t.add_child(parent, tok(rng), 0.0);
    }
  }
  std::vector<int32_t> slots(static_cast<size_t>(num_slots));
  for (int32_t s = 0; s < num_slots; ++s) slots[static_cast<size_t>(s)] = s;
  std::shuffle(slots.begin(), slots.end(), rng);
  std::bernoulli_distribution none(p_noslot);
  for (int32_t i = 0; i < num_nodes; ++i)
    t.node(i).slot = (i < num_slots && !none(rng)) ? slots[static_cast<size_t>(i)] : kNoSlot;
  return t;
}

// A distribution over n entries with exact zeros (warped-out pairs, a
// `zero_frac` share) and exact ties (0.125 before normalising).
inline std::vector<double> random_dist(std::mt19937_64& rng, size_t n, double zero_frac) {
  std::vector<double> p(n);
  double s = 0.0;
  for (auto& x : p) {
    x = std::bernoulli_distribution(zero_frac)(rng) ? 0.0 : std::exponential_distribution<double>(1.0)(rng);
    if (std::bernoulli_distribution(0.05)(rng)) x = 0.125;  // exact ties
    s += x;
  }
  if (s == 0.0) p[0] = s = 1.0;
  for (auto& x : p) x /= s;
  return p;
}

inline std::vector<int32_t> parents_of(const TokenTree& t) {
  std::vector<int32_t> p;
  for (const auto& n : t.nodes()) p.push_back(n.parent);
  return p;
}
inline std::vector<int32_t> slots_of(const TokenTree& t) {
  std::vector<int32_t> s;
  for (const auto& n : t.nodes()) s.push_back(n.slot);
  return s;
}

// Beam states for a STATIC test at step t: each a walk of a random item of
// `c` through its first t tokens, then a dead beam, a random state of any
// level and the last state (and, with `out_of_range`, a state past the end):
// the cases the device and the CPU must treat alike.
inline std::vector<int64_t> random_static_states(const ConstraintSet& c, const TransitionMatrix& tm, int32_t n, int32_t t,
                                                 std::mt19937_64& rng, bool out_of_range = false) {
  std::vector<int64_t> states(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const int32_t* it = c.item(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.size())));
    int64_t s = 0;
    for (int32_t j = 0; j < std::min(t, tm.length); ++j) s = static_next_state(tm, s, it[j], j);
    states[static_cast<size_t>(i)] = s;
  }
  if (n >= 2) states[1] = kDeadState;
  if (n >= 3) states[2] = static_cast<int64_t>(rng() % static_cast<uint64_t>(tm.num_states()));
  if (n >= 4) states[3] = tm.num_states() - 1;
  if (out_of_range && n >= 5) states[4] = tm.num_states() + 3;
  return states;
}

}  // namespace triescope::testing
