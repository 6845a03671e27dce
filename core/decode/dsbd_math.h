// DSBD's acceptance math (Algorithm 1 lines 17 and 22), one definition that
// both the CPU reference (dsbd_verify_layer and dsbd_alphas, core/decode/
// dsbd.cpp) and the device verifier (cuda/dsbd_verify.h, run by
// cuda/dsbd_verify.cu) compute with, so their decisions agree bit for bit.
// tests/dsbd/test_dsbd_math.cpp checks it against the paper's expressions.
// Plain inline C++; __host__ __device__ under nvcc. No expression has the
// shape a * b + c, so FMA contraction cannot change a rounding.
#pragma once

#if defined(__CUDACC__)
#define TS_DSBD_HD __host__ __device__ inline
#else
#define TS_DSBD_HD inline
#endif

namespace triescope::dsbd_math {

// Line 17's ratio for draft x with residual p'(x) and draft probability
// q(x): p'(x) / q(x) (the rule used; 1 where q(x) = 0), or with q_over_p the
// paper's printed q(x) / p'(x) (a negative control; 1 where p'(x) = 0).
TS_DSBD_HD double accept_ratio(double p, double q, bool q_over_p) {
  if (!q_over_p) return q > 0.0 ? p / q : 1.0;
  return p > 0.0 ? q / p : 1.0;
}

// min(1, r) exactly as std::min(1.0, r): r unless !(r < 1) (a NaN gives 1).
TS_DSBD_HD double min1(double r) { return r < 1.0 ? r : 1.0; }

// The probability of accepting draft x: min(1, line 17's ratio).
TS_DSBD_HD double accept_prob(double p, double q, bool q_over_p) { return min1(accept_ratio(p, q, q_over_p)); }

// One element of line 22's residual before normalising: max(0, p'(x) - q(x))
// exactly as std::max(0.0, d): 0 unless 0 < d.
TS_DSBD_HD double residual(double p, double q) {
  const double d = p - q;
  return d > 0.0 ? d : 0.0;
}

// Whether a residual of total `mass` can be normalised; when not, p' == q
// and nothing is left to correct (the next draft is accepted surely).
TS_DSBD_HD bool residual_has_mass(double mass) { return mass > 1e-300; }

}  // namespace triescope::dsbd_math
