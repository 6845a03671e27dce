// core/select/log_normaliser.h against the direct formula (libm exp, one
// long double sum): within 2e-15 relative on the sum (an FMA exp a few ulp
// from libm's near the maximum, 32 partial sums instead of one);
// every path this machine has (AVX-512, AVX2, portable) bit-identical; the allowed-token variant
// keeps exactly what its bound promises.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/select/log_normaliser.h"
#include "core/select/lse_math.h"

using namespace triescope;

namespace {

// The direct formula, independent of the normaliser: max + log of one
// long double sum of libm exps, two passes.
double reference_lse(const std::vector<float>& x) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float v : x) mx = std::max(mx, static_cast<double>(v));
  if (mx == -std::numeric_limits<double>::infinity()) return mx;
  long double sum = 0;
  for (float v : x) sum += std::exp(static_cast<long double>(v) - mx);
  return mx + static_cast<double>(std::log(sum));
}

// Runs f under every path this machine has (the best one last), so results
// can be compared bit for bit.
template <class F>
void each_path(F f) {
  for (const char* path : {"portable", "avx2", "avx512"}) {
    if (!log_normaliser_use(path)) continue;
    CAPTURE(path);
    f(path);
  }
  log_normaliser_use("best");
}

}  // namespace

TEST_CASE("log normaliser: equals the direct formula within rounding, every path bit-identical, log_softmax_row subtracts it", "[core][log_normaliser]") {
  const uint64_t seed = GENERATE(1u, 2u, 3u);
  std::mt19937_64 rng(seed);
  const float scale = GENERATE(0.01f, 3.0f, 80.0f);
  std::normal_distribution<float> g(0.0f, scale);
  for (int32_t V : {1, 2, 7, 31, 32, 33, 63, 64, 65, 100, 2048, 2049, 40000}) {
    CAPTURE(seed, scale, V, log_normaliser_isa());
    std::vector<float> x(static_cast<size_t>(V));
    for (auto& v : x) v = g(rng);
    // masked logits (-inf), never all of them
    for (int32_t i = 0; i < V / 5; ++i) x[rng() % static_cast<uint64_t>(V)] = -std::numeric_limits<float>::infinity();
    x[rng() % static_cast<uint64_t>(V)] = 0.5f;
    const double ref = reference_lse(x);
    const double got = row_log_normaliser(x.data(), V);
    // |lse - ref| = |log(S / S_ref)| <= relative error of the sum
    CHECK(std::abs(got - ref) <= 2e-15 * std::max(1.0, std::abs(ref)) + 2e-15);
    each_path([&](const char*) { CHECK(row_log_normaliser(x.data(), V) == got); });
    std::vector<double> lp(x.size());
    log_softmax_row(x.data(), V, lp.data());
    CHECK(log_softmax_lse(x.data(), V) == got);
    CHECK(lp[0] == static_cast<double>(x[0]) - got);
  }
}

TEST_CASE("log normaliser: exp kernel, -inf rows, bad logits", "[core][log_normaliser]") {
  // degree-6 Taylor on |r| <= ln 2 / 32 (4.4e-16) plus rounding, plus the
  // one-FMA range reduction (ln 2 / 16 is off by 1.45e-18: 3.35e-17 |d| relative)
  int64_t bad = 0;
  for (int i = 0; i <= 200000; ++i) {
    const double d = -700.0 * i / 200000.0;
    bad += !(std::abs(log_normaliser_exp(d) - std::exp(d)) <= (1e-15 + 3.4e-17 * std::abs(d)) * std::exp(d));
  }
  CHECK(bad == 0);
  CHECK(log_normaliser_exp(0.0) == 1.0);
  CHECK(log_normaliser_exp(-701.0) == 0.0);
  std::vector<float> all_masked(70, -std::numeric_limits<float>::infinity());
  each_path([&](const char*) { CHECK(row_log_normaliser(all_masked.data(), 70) == -std::numeric_limits<double>::infinity()); });
  // whole blocks of -inf before the first finite logit
  std::vector<float> late(100, -std::numeric_limits<float>::infinity());
  late[70] = 2.0f;
  late[99] = 1.0f;
  const double want = reference_lse(late);
  each_path([&](const char*) { CHECK(std::abs(row_log_normaliser(late.data(), 100) - want) <= 1e-15 * std::abs(want)); });
  std::vector<float> x(70, 1.0f);
  x[37] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(row_log_normaliser(x.data(), 70, "row 3"), Catch::Contains("row 3: logit 37 is NaN"));
  x[37] = std::numeric_limits<float>::infinity();
  each_path([&](const char*) { CHECK_THROWS_WITH(row_log_normaliser(x.data(), 70, "row 3"), Catch::Contains("row 3: logit 37 is +inf")); });
  CHECK_THROWS_WITH(log_normaliser_use("sse"), Catch::Contains("no path \"sse\""));
}

TEST_CASE("log normaliser: the allowed tokens kept are a superset of those above the bound", "[core][log_normaliser]") {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (int trial = 0; trial < 60; ++trial) {
    const int32_t V = std::uniform_int_distribution<int32_t>(1, 3000)(rng);
    CAPTURE(trial, V);
    std::vector<float> x(static_cast<size_t>(V));
    for (auto& v : x) v = g(rng);
    if (trial % 3 == 0) x[rng() % static_cast<uint64_t>(V)] = -std::numeric_limits<float>::infinity();
    std::vector<uint64_t> bits(static_cast<size_t>((V + 63) / 64), 0);
    for (int32_t v = 0; v < V; ++v)
      if (rng() % 3 == 0) bits[static_cast<size_t>(v / 64)] |= uint64_t{1} << (v % 64);
    const double bound = trial % 4 == 0 ? -std::numeric_limits<double>::infinity() : std::normal_distribution<double>(-2.0, 2.0)(rng);
    std::vector<int32_t> kept(static_cast<size_t>(V)), kept_other(static_cast<size_t>(V));
    int32_t c = 0;
    const double lse = row_log_normaliser_allowed(x.data(), V, bits.data(), bound, kept.data(), &c);
    each_path([&](const char*) {
      int32_t co = 0;
      CHECK(row_log_normaliser_allowed(x.data(), V, bits.data(), bound, kept_other.data(), &co) == lse);
      REQUIRE(co == c);
      CHECK(std::equal(kept.begin(), kept.begin() + c, kept_other.begin()));
    });
    CHECK(lse == row_log_normaliser(x.data(), V));
    std::vector<char> is_kept(static_cast<size_t>(V), 0);
    for (int32_t j = 0; j < c; ++j) {
      const int32_t v = kept[static_cast<size_t>(j)];
      REQUIRE((v >= 0 && v < V));
      if (j > 0) CHECK(kept[static_cast<size_t>(j) - 1] < v);  // ascending
      CHECK(((bits[static_cast<size_t>(v / 64)] >> (v % 64)) & 1u));
      CHECK(std::isfinite(x[static_cast<size_t>(v)]));
      is_kept[static_cast<size_t>(v)] = 1;
    }
    for (int32_t v = 0; v < V; ++v) {
      const bool allowed = (bits[static_cast<size_t>(v / 64)] >> (v % 64)) & 1u;
      // every allowed finite token whose log-prob exceeds the bound is kept
      if (allowed && std::isfinite(x[static_cast<size_t>(v)]) && static_cast<double>(x[static_cast<size_t>(v)]) - lse > bound)
        CHECK(is_kept[static_cast<size_t>(v)]);
    }
  }
}

// lse_math (core/select/lse_math.h), the arithmetic the device shares: its
// 2^(j/16) constants are exp2's, its log within 2 ulp of glibc's, and the
// parts of every path finish to row_log_normaliser's value.
TEST_CASE("lse_math: the 2^(j/16) table, log_positive against libm, parts on every path", "[core][log_normaliser]") {
  for (int j = 0; j < 16; ++j) {
    CAPTURE(j);
    CHECK(lse_math::pow2_sixteenth(j) == static_cast<double>(std::exp2(static_cast<long double>(j) / 16.0L)));
  }
  std::mt19937_64 rng(20261127);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> ex(-60, 60);
  double worst = 0;
  for (int i = 0; i < 1000000; ++i) {
    const double s = i < 1000 ? 1.0 + i * 0x1p-40 : std::ldexp(mant(rng), ex(rng));
    const double want = std::log(s), got = lse_math::log_positive(s);
    const double ulp = std::nextafter(std::abs(want), HUGE_VAL) - std::abs(want);
    worst = std::max(worst, std::abs(got - want) / (want == 0 ? 0x1p-1074 : ulp));
  }
  CAPTURE(worst);
  CHECK(worst <= 2.0);
  CHECK(lse_math::log_positive(1.0) == 0.0);
  std::vector<float> x(4099);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (float& v : x) v = n(rng);
  each_path([&](const char*) {
    const LogNormaliserParts p = row_log_normaliser_parts(x.data(), 4099);
    CHECK(lse_math::finish(p.partial, p.started, p.mx) == row_log_normaliser(x.data(), 4099));
  });
}
