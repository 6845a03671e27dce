// DSBD's acceptance math (core/decode/dsbd_math.h), which the CPU reference
// and the device verifier both compute with, against the paper's expressions
// written out here: Algorithm 1 line 17, min(1, p'(x) / q(x)) (and the printed
// q(x) / p'(x)), and line 22's max(0, p'(x) - q(x)).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "core/decode/dsbd_math.h"

using namespace triescope;

TEST_CASE("dsbd_math: line 17 and line 22 equal the paper's expressions on random probabilities", "[dsbd]") {
  const uint64_t seed = GENERATE(1u, 2u, 3u, 4u);
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (int i = 0; i < 2000; ++i) {
    // A quarter of the draws are exact zeros or equal pairs, where the rules branch.
    const double p = i % 8 == 0 ? 0.0 : u01(rng);
    const double q = i % 8 == 1 ? 0.0 : i % 8 == 2 ? p : u01(rng);
    CAPTURE(i, p, q);
    CHECK(dsbd_math::accept_prob(p, q, false) == (q > 0.0 ? std::min(1.0, p / q) : 1.0));
    CHECK(dsbd_math::accept_prob(p, q, true) == (p > 0.0 ? std::min(1.0, q / p) : 1.0));
    CHECK(dsbd_math::residual(p, q) == std::max(0.0, p - q));
    CHECK(dsbd_math::accept_prob(p, q, false) <= 1.0);
    CHECK(dsbd_math::accept_prob(p, q, false) >= 0.0);
  }
}

TEST_CASE("dsbd_math: the named cases", "[dsbd]") {
  CHECK(dsbd_math::accept_prob(0.3, 0.6, false) == 0.5);  // 0.6 is 2 x 0.3 in binary too
  CHECK(dsbd_math::accept_prob(0.6, 0.3, false) == 1.0);  // p' > q: accepted surely
  CHECK(dsbd_math::accept_prob(0.2, 0.0, false) == 1.0);  // never drafted: the ratio is 1
  CHECK(dsbd_math::accept_prob(0.0, 0.4, true) == 1.0);   // printed rule, p' = 0
  CHECK(dsbd_math::accept_ratio(0.6, 0.3, false) == 0.6 / 0.3);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(dsbd_math::min1(nan) == 1.0);  // as std::min(1.0, NaN)
  CHECK(dsbd_math::residual(0.25, 0.5) == 0.0);
  CHECK(dsbd_math::residual(0.5, 0.25) == 0.25);
  CHECK_FALSE(dsbd_math::residual_has_mass(0.0));
  CHECK_FALSE(dsbd_math::residual_has_mass(1e-301));
  CHECK(dsbd_math::residual_has_mass(1e-299));
}
