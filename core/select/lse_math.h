// The log-normaliser's arithmetic, one definition for the CPU reference
// (core/select/log_normaliser.cpp) and the device (cuda/row_log_normaliser.cu),
// so both give a row's log(sum exp) bit for bit: only IEEE operations
// (+, -, *, /, fma, ldexp, frexp), each written out, so no compiler may fuse
// a multiply and an add differently on either side (on the device every
// product and sum goes through __dmul_rn / __dadd_rn, which nvcc never
// contracts). Plain inline C++; __host__ __device__ under nvcc.
#pragma once
#include <cmath>
#include <cstdint>

#include <cstring>

#if defined(__CUDACC__)
#define TS_LSE_HD __host__ __device__ inline
#else
#define TS_LSE_HD inline
#endif

namespace triescope::lse_math {

// Logits a lane sums: lane i of kLanes sums the logits i mod kLanes.
inline constexpr int32_t kLanes = 32;

TS_LSE_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TS_LSE_HD double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
TS_LSE_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TS_LSE_HD int64_t bits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<int64_t>(__double_as_longlong(x));
#else
  int64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}

// exp(d) = 2^(n / 16) * exp(r), n = round(d * 16 / ln 2), |r| <= ln 2 / 32:
// 2^(n/16) = 2^(n >> 4) * pow2_sixteenth(n & 15); exp(r) by its degree-6
// Taylor polynomial (truncation below 4.4e-16 relative, 2 ulp, at the
// interval's ends).
inline constexpr double kMagic = 0x1.8p52;             // adding it rounds to an integer held in the low mantissa bits
inline constexpr double kScale = 23.083120654223414;   // 16 / ln 2
// r = d - n ln2/16 in one FMA with ln 2 / 16 rounded to double (off by
// 1.45e-18): exp(d) gains 3.35e-17 |d| relative error, which matters only
// where exp(d) is small. In a sum >= 1 a term adds at most 1.2e-17 (at
// d = -1): |V| x 1.2e-17 relative in the worst case, ~1e-16 on real rows.
inline constexpr double kLn2By16 = 0.043321698784996581;
inline constexpr double kFloor = -700.0;  // exp below it is 0 here (far below one ulp of a sum that holds exp(0) = 1)
// The Taylor coefficients 1/c!, as scalars (device code reads no constexpr
// array) and as the array the SIMD paths index.
inline constexpr double kC0 = 1.0, kC1 = 1.0, kC2 = 1.0 / 2, kC3 = 1.0 / 6, kC4 = 1.0 / 24, kC5 = 1.0 / 120, kC6 = 1.0 / 720;
inline constexpr double kC[7] = {kC0, kC1, kC2, kC3, kC4, kC5, kC6};

// 2^(j / 16) rounded to double, j in [0, 16) (tests/core/test_log_normaliser.cpp
// checks them against exp2 in long double).
TS_LSE_HD double pow2_sixteenth(int j) {
  switch (j & 15) {
    case 0: return 0x1.0000000000000p+0;
    case 1: return 0x1.0b5586cf9890fp+0;
    case 2: return 0x1.172b83c7d517bp+0;
    case 3: return 0x1.2387a6e756238p+0;
    case 4: return 0x1.306fe0a31b715p+0;
    case 5: return 0x1.3dea64c123422p+0;
    case 6: return 0x1.4bfdad5362a27p+0;
    case 7: return 0x1.5ab07dd485429p+0;
    case 8: return 0x1.6a09e667f3bcdp+0;
    case 9: return 0x1.7a11473eb0187p+0;
    case 10: return 0x1.8ace5422aa0dbp+0;
    case 11: return 0x1.9c49182a3f090p+0;
    case 12: return 0x1.ae89f995ad3adp+0;
    case 13: return 0x1.c199bdd85529cp+0;
    case 14: return 0x1.d5818dcfba487p+0;
    default: return 0x1.ea4afa2a490dap+0;
  }
}

// exp(d) for kFloor <= d <= 0 (the SIMD paths do these operations lane by lane).
TS_LSE_HD double exp_kernel(double d) {
  const double t = fma(d, kScale, kMagic);
  const double nf = sub(t, kMagic);
  const int64_t ni = bits(t) - bits(kMagic);
  const double r = fma(-nf, kLn2By16, d);
  double p = kC6;
  p = fma(p, r, kC5);
  p = fma(p, r, kC4);
  p = fma(p, r, kC3);
  p = fma(p, r, kC2);
  p = fma(p, r, kC1);
  p = fma(p, r, kC0);
  return ldexp(mul(pow2_sixteenth(static_cast<int>(ni & 15)), p), static_cast<int>(ni >> 4));
}
// exp(d) for d <= 0; 0 below kFloor and for NaN (d = -inf - -inf before a
// row's first finite logit).
TS_LSE_HD double exp_or_zero(double d) { return d >= kFloor ? exp_kernel(d) : 0.0; }

// ln 2 split so that e * kLn2Hi is exact for |e| < 2^11.
inline constexpr double kLn2Hi = 0x1.62e42fee00000p-1;
inline constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
inline constexpr double kSqrtHalf = 0x1.6a09e667f3bcdp-1;

// log(s) for a finite s > 0: s = m 2^e with m in [sqrt(1/2), sqrt(2)),
// g = m - 1 (exact), u = g / (2 + g), log m = 2 atanh(u) = 2u (1 + u^2/3 +
// u^4/5 + ... + u^22/23) (|u| <= 0.1716: the first term left out is below
// 1e-18 relative), then e ln 2 + log m. Within 2 ulp of log(s) (the test
// compares it with std::log on a million values).
TS_LSE_HD double log_positive(double s) {
  int e = 0;
  double m = frexp(s, &e);  // m in [0.5, 1)
  if (m < kSqrtHalf) {
    m = ldexp(m, 1);
    e -= 1;
  }
  const double g = sub(m, 1.0);
  const double u = g / add(2.0, g);
  const double w = mul(u, u);
  double q = 1.0 / 23;
  q = fma(q, w, 1.0 / 21);
  q = fma(q, w, 1.0 / 19);
  q = fma(q, w, 1.0 / 17);
  q = fma(q, w, 1.0 / 15);
  q = fma(q, w, 1.0 / 13);
  q = fma(q, w, 1.0 / 11);
  q = fma(q, w, 1.0 / 9);
  q = fma(q, w, 1.0 / 7);
  q = fma(q, w, 1.0 / 5);
  q = fma(q, w, 1.0 / 3);
  const double log_m = mul(2.0, fma(mul(u, w), q, u));
  const double ed = static_cast<double>(e);
  return add(mul(ed, kLn2Hi), fma(ed, kLn2Lo, log_m));
}

// The row's log-normaliser from its kLanes partial sums (lane i: the
// exponentials of the logits i mod kLanes, relative to mx) and its maximum
// mx: mx + log(sum of the partials in lane order); -inf when no logit was
// finite (!started).
TS_LSE_HD double finish(const double* partial, bool started, double mx) {
  if (!started) return -HUGE_VAL;
  double s = 0.0;
  for (int32_t l = 0; l < kLanes; ++l) s = add(s, partial[l]);
  return add(mx, log_positive(s));
}

}  // namespace triescope::lse_math
