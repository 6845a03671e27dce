// Chi-square helpers for the distribution tests (tests/dsbd).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace triescope::test {

// Pearson chi-square of `observed` counts against `expected` probabilities
// (same length, N = sum observed). Cells expected below `min_expected` are
// pooled into one cell so the statistic stays chi-square distributed.
struct ChiSquare {
  double stat = 0.0;
  int32_t df = 0;
};
inline ChiSquare chi_square(const std::vector<int64_t>& observed, const std::vector<double>& expected_prob, double min_expected = 5.0) {
  double n = 0.0;
  for (int64_t o : observed) n += static_cast<double>(o);
  ChiSquare c;
  double pool_o = 0.0, pool_e = 0.0;
  int32_t cells = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double e = expected_prob[i] * n;
    if (e < min_expected) {
      pool_o += static_cast<double>(observed[i]);
      pool_e += e;
      continue;
    }
    c.stat += (static_cast<double>(observed[i]) - e) * (static_cast<double>(observed[i]) - e) / e;
    ++cells;
  }
  if (pool_e > 0.0) {
    c.stat += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
    ++cells;
  } else if (pool_o > 0.0) {
    c.stat = INFINITY;  // mass where the law puts none
  }
  c.df = cells - 1;
  return c;
}

// Upper quantile of chi-square(df) by Wilson-Hilferty; z = 3.719 is the
// standard normal's 1 - 1e-4 quantile (a generous significance).
inline double chi_square_critical(int32_t df, double z = 3.719) {
  const double k = df;
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

}  // namespace triescope::test
