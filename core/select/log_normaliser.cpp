#include "core/select/log_normaliser.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>

#include "core/common/error.h"
#include "core/common/parallel_rows.h"
#include "core/select/lse_math.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define TRIESCOPE_LSE_AVX512 1  // AVX-512 and AVX2 paths, chosen at run time
#endif

namespace triescope {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using lse_math::kC;
using lse_math::kFloor;
using lse_math::kLn2By16;
using lse_math::kMagic;
using lse_math::kScale;
constexpr int32_t kBlock = lse_math::kLanes;

// lse_math::pow2_sixteenth as a table, for the SIMD paths' permutes.
struct Pow2Table {
  alignas(64) double v[16];
  Pow2Table() {
    for (int j = 0; j < 16; ++j) v[j] = lse_math::pow2_sixteenth(j);
  }
};
const double* pow2_table() {
  static const Pow2Table t;
  return t.v;
}

enum class Isa { portable = 0, avx2 = 1, avx512 = 2 };
std::atomic<int> g_isa_cap{2};  // the best path a caller allows (tests lower it)

// The scalar kernel (lse_math::exp_or_zero); the SIMD lanes do exactly its operations.
double exp_or_zero(double d, const double* /*T*/) { return lse_math::exp_or_zero(d); }

[[noreturn]] void bad_logit(const char* who, int64_t pos, float v) {
  TS_FAIL(who << ": logit " << pos << " is " << (std::isnan(v) ? "NaN" : "+inf") << " (logits must be finite or -inf)");
}

// The float threshold a logit must exceed: bound + max rounded down, so no
// token above the exact bound is dropped.
float threshold_down(double t) {
  if (std::isnan(t)) return -std::numeric_limits<float>::infinity();
  float f = static_cast<float>(t);
  if (static_cast<double>(f) > t) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}

// The float threshold for bound + mx, the exact sum rounded down: where
// |mx| dwarfs the bound (a row wholly near -1e18, as engines that mask with a
// huge finite logit write it) the double sum rounds the bound away, and a
// token at the row's maximum would not lie above it.
float threshold_below(double bound, double mx) {
  double s = bound + mx;
  if (std::isfinite(s)) {
    const double bv = s - mx;                        // Knuth's TwoSum: s + err == bound + mx exactly
    const double err = (bound - bv) + (mx - (s - bv));
    if (err < 0.0) s = std::nextafter(s, -kInf);
  }
  return threshold_down(s);
}

// The float at or above t: a logit >= it lies at or above t.
float threshold_up(double t) {
  float f = static_cast<float>(t);
  if (static_cast<double>(f) < t) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

LogNormaliserParts parts_of(const double* partial, bool started, double mx) {
  LogNormaliserParts p;
  std::copy(partial, partial + kBlock, p.partial);
  p.mx = mx;
  p.started = started;
  return p;
}

template <bool kAllowed>
LogNormaliserParts pass_portable(const float* x, int32_t V, const uint64_t* allowed, double bound, int32_t* out, int32_t* count, const char* who) {
  const double* T = pow2_table();
  double partial[kBlock] = {};
  double mx = -kInf;
  bool started = false;
  float thr = -std::numeric_limits<float>::infinity();  // kept tokens lie above it (recomputed when mx moves)
  int32_t c = 0;
  for (int32_t b = 0; b < V; b += kBlock) {
    const int32_t n = std::min(kBlock, V - b);
    float bm = -std::numeric_limits<float>::infinity();
    for (int32_t i = 0; i < n; ++i) {
      const float v = x[b + i];
      if (!(v < std::numeric_limits<float>::infinity())) bad_logit(who, b + i, v);
      bm = std::max(bm, v);
    }
    if (static_cast<double>(bm) > mx) {
      if (started) {
        const double f = exp_or_zero(mx - static_cast<double>(bm), T);
        for (double& p : partial) p *= f;
      }
      mx = bm;
      started = true;
      thr = threshold_below(bound, mx);
    }
    if constexpr (kAllowed) {
      const uint32_t bits = static_cast<uint32_t>(allowed[b / 64] >> (b % 64));
      for (int32_t i = 0; i < n; ++i)
        if (((bits >> i) & 1u) && x[b + i] > thr) out[c++] = b + i;
    }
    for (int32_t i = 0; i < n; ++i) partial[i] += exp_or_zero(static_cast<double>(x[b + i]) - mx, T);
  }
  if (count) *count = c;
  return parts_of(partial, started, mx);
}

#ifdef TRIESCOPE_LSE_AVX512
// exp_kernel on 8 lanes; `clamp`: some lane may lie below kFloor (or be -inf).
template <bool kClamp>
__attribute__((target("avx512f"))) inline __m512d exp_lanes(__m512d d, __m512d T0, __m512d T1) {
  __mmask8 live = 0xFF;
  if constexpr (kClamp) {
    live = _mm512_cmp_pd_mask(d, _mm512_set1_pd(kFloor), _CMP_GE_OQ);
    d = _mm512_max_pd(d, _mm512_set1_pd(kFloor));
  }
  const __m512d magic = _mm512_set1_pd(kMagic);
  const __m512d t = _mm512_fmadd_pd(d, _mm512_set1_pd(kScale), magic);
  const __m512d nf = _mm512_sub_pd(t, magic);
  const __m512d r = _mm512_fnmadd_pd(nf, _mm512_set1_pd(kLn2By16), d);
  __m512d p = _mm512_set1_pd(kC[6]);
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC[5]));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC[4]));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC[3]));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC[2]));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC[1]));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC[0]));
  // The low 4 bits of t's pattern are n mod 16 (t = 1.5 * 2^52 + n); scalef
  // multiplies by 2^floor(n / 16) exactly.
  const __m512d v = _mm512_mul_pd(_mm512_permutex2var_pd(T0, _mm512_castpd_si512(t), T1), p);
  const __m512d e = _mm512_scalef_pd(v, _mm512_mul_pd(nf, _mm512_set1_pd(1.0 / 16)));
  if constexpr (kClamp) return _mm512_maskz_mov_pd(live, e);
  return e;
}

__attribute__((target("avx512f"))) inline __m512d widen_lo(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
__attribute__((target("avx512f"))) inline __m512d widen_hi(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

template <bool kAllowed>
__attribute__((target("avx512f"))) LogNormaliserParts pass_avx512(const float* x, int32_t V, const uint64_t* allowed, double bound, int32_t* out,
                                                     int32_t* count, const char* who) {
  const double* T = pow2_table();
  const __m512d T0 = _mm512_load_pd(T), T1 = _mm512_load_pd(T + 8);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512 pinf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  __m512d acc0 = _mm512_setzero_pd(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  double mx = -kInf;
  bool started = false;
  // Thresholds that move with mx, recomputed only when it moves: the bound
  // for kept tokens, and the lowest logit whose exp needs no clamp.
  // Before the first finite logit, lo = +inf sends every block through the
  // clamp (an all -inf block there has d = -inf - (-inf) = NaN).
  __m512 thr = _mm512_set1_ps(-std::numeric_limits<float>::infinity()), lo = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  int32_t c = 0;
  for (int32_t b = 0; b < V; b += kBlock) {
    const int32_t n = std::min(kBlock, V - b);
    __m512 v0, v1;
    if (n == kBlock) {
      v0 = _mm512_loadu_ps(x + b);
      v1 = _mm512_loadu_ps(x + b + 16);
    } else {  // the tail: missing lanes read -inf, which adds 0 and is never kept
      const __mmask16 m0 = static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1);
      const __mmask16 m1 = static_cast<__mmask16>(n <= 16 ? 0 : (1u << (n - 16)) - 1);
      v0 = _mm512_mask_loadu_ps(ninf, m0, x + b);
      v1 = _mm512_mask_loadu_ps(ninf, m1, x + b + 16);
    }
    const uint32_t bad = static_cast<uint32_t>(_mm512_cmp_ps_mask(v0, pinf, _CMP_NLT_UQ)) |
                         (static_cast<uint32_t>(_mm512_cmp_ps_mask(v1, pinf, _CMP_NLT_UQ)) << 16);
    if (bad) {
      const int32_t i = std::countr_zero(bad);
      bad_logit(who, b + i, x[b + i]);
    }
    const __m512 vmx = _mm512_set1_ps(static_cast<float>(mx));
    if (_mm512_cmp_ps_mask(v0, vmx, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v1, vmx, _CMP_GT_OQ)) {
      const float bm = _mm512_reduce_max_ps(_mm512_max_ps(v0, v1));
      if (started) {
        const __m512d f = _mm512_set1_pd(exp_or_zero(mx - static_cast<double>(bm), T));
        acc0 = _mm512_mul_pd(acc0, f);
        acc1 = _mm512_mul_pd(acc1, f);
        acc2 = _mm512_mul_pd(acc2, f);
        acc3 = _mm512_mul_pd(acc3, f);
      }
      mx = bm;
      started = true;
      if constexpr (kAllowed) thr = _mm512_set1_ps(threshold_below(bound, mx));
      lo = _mm512_set1_ps(threshold_up(mx + kFloor));
    }
    if constexpr (kAllowed) {
      const uint32_t bits = static_cast<uint32_t>(allowed[b / 64] >> (b % 64));
      if (bits) {  // a block with no allowed token costs nothing more
        uint32_t keep = bits & (static_cast<uint32_t>(_mm512_cmp_ps_mask(v0, thr, _CMP_GT_OQ)) |
                                (static_cast<uint32_t>(_mm512_cmp_ps_mask(v1, thr, _CMP_GT_OQ)) << 16));
        for (; keep; keep &= keep - 1) out[c++] = b + std::countr_zero(keep);
      }
    }
    const __m512d m = _mm512_set1_pd(mx);
    // Without a lane below mx + kFloor (no -inf, no tail) the clamp is not needed.
    if (n == kBlock && !(_mm512_cmp_ps_mask(v0, lo, _CMP_LT_OQ) | _mm512_cmp_ps_mask(v1, lo, _CMP_LT_OQ))) {
      acc0 = _mm512_add_pd(acc0, exp_lanes<false>(_mm512_sub_pd(widen_lo(v0), m), T0, T1));
      acc1 = _mm512_add_pd(acc1, exp_lanes<false>(_mm512_sub_pd(widen_hi(v0), m), T0, T1));
      acc2 = _mm512_add_pd(acc2, exp_lanes<false>(_mm512_sub_pd(widen_lo(v1), m), T0, T1));
      acc3 = _mm512_add_pd(acc3, exp_lanes<false>(_mm512_sub_pd(widen_hi(v1), m), T0, T1));
    } else {
      acc0 = _mm512_add_pd(acc0, exp_lanes<true>(_mm512_sub_pd(widen_lo(v0), m), T0, T1));
      acc1 = _mm512_add_pd(acc1, exp_lanes<true>(_mm512_sub_pd(widen_hi(v0), m), T0, T1));
      acc2 = _mm512_add_pd(acc2, exp_lanes<true>(_mm512_sub_pd(widen_lo(v1), m), T0, T1));
      acc3 = _mm512_add_pd(acc3, exp_lanes<true>(_mm512_sub_pd(widen_hi(v1), m), T0, T1));
    }
  }
  alignas(64) double partial[kBlock];
  _mm512_store_pd(partial, acc0);
  _mm512_store_pd(partial + 8, acc1);
  _mm512_store_pd(partial + 16, acc2);
  _mm512_store_pd(partial + 24, acc3);
  if (count) *count = c;
  return parts_of(partial, started, mx);
}

// The same lanes 4 at a time (AVX2 + FMA): 8 accumulators hold lanes
// 0-3, 4-7, ..., 28-31. No scalef or 64-bit arithmetic shift here: 2^(n >> 4)
// is built from floor(n / 16) in the exponent field, the same exact scaling.
template <bool kClamp>
__attribute__((target("avx2,fma"))) inline __m256d exp_lanes4(__m256d d, const double* T) {
  __m256d live = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  if constexpr (kClamp) {
    live = _mm256_cmp_pd(d, _mm256_set1_pd(kFloor), _CMP_GE_OQ);
    d = _mm256_max_pd(d, _mm256_set1_pd(kFloor));
  }
  const __m256d magic = _mm256_set1_pd(kMagic);
  const __m256d t = _mm256_fmadd_pd(d, _mm256_set1_pd(kScale), magic);
  const __m256d nf = _mm256_sub_pd(t, magic);
  const __m256d r = _mm256_fnmadd_pd(nf, _mm256_set1_pd(kLn2By16), d);
  __m256d p = _mm256_set1_pd(kC[6]);
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC[5]));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC[4]));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC[3]));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC[2]));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC[1]));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC[0]));
  const __m256i j = _mm256_and_si256(_mm256_castpd_si256(t), _mm256_set1_epi64x(15));
  const __m256d v = _mm256_mul_pd(_mm256_i64gather_pd(T, j, 8), p);
  const __m256d e = _mm256_floor_pd(_mm256_mul_pd(nf, _mm256_set1_pd(1.0 / 16)));  // n >> 4, exactly
  const __m256i biased = _mm256_castpd_si256(_mm256_add_pd(e, _mm256_set1_pd(kMagic + 1023)));  // low bits: e + 1023
  const __m256d scale = _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52));                      // 2^e
  return _mm256_and_pd(_mm256_mul_pd(v, scale), live);
}

template <bool kAllowed>
__attribute__((target("avx2,fma"))) LogNormaliserParts pass_avx2(const float* x, int32_t V, const uint64_t* allowed, double bound, int32_t* out,
                                                    int32_t* count, const char* who) {
  const double* T = pow2_table();
  const __m256 pinf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256d acc[8];
  for (auto& a : acc) a = _mm256_setzero_pd();
  double mx = -kInf;
  bool started = false;
  __m256 thr = _mm256_set1_ps(-std::numeric_limits<float>::infinity()), lo = _mm256_set1_ps(std::numeric_limits<float>::infinity());  // as in pass_avx512
  int32_t c = 0;
  for (int32_t b = 0; b < V; b += kBlock) {
    const int32_t n = std::min(kBlock, V - b);
    __m256 v[4];
    for (int q = 0; q < 4; ++q) {
      if (n == kBlock) {
        v[q] = _mm256_loadu_ps(x + b + 8 * q);
      } else {  // the tail: missing lanes read -inf
        alignas(32) float tmp[8];
        for (int i = 0; i < 8; ++i) tmp[i] = 8 * q + i < n ? x[b + 8 * q + i] : -std::numeric_limits<float>::infinity();
        v[q] = _mm256_load_ps(tmp);
      }
    }
    uint32_t bad = 0;
    for (int q = 0; q < 4; ++q) bad |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(v[q], pinf, _CMP_NLT_UQ))) << (8 * q);
    if (bad) {
      const int32_t i = std::countr_zero(bad);
      bad_logit(who, b + i, x[b + i]);
    }
    const __m256 vmx = _mm256_set1_ps(static_cast<float>(mx));
    int gt = 0;
    for (int q = 0; q < 4; ++q) gt |= _mm256_movemask_ps(_mm256_cmp_ps(v[q], vmx, _CMP_GT_OQ));
    if (gt) {
      float bm = -std::numeric_limits<float>::infinity();
      for (int32_t i = 0; i < n; ++i) bm = std::max(bm, x[b + i]);
      if (started) {
        const __m256d f = _mm256_set1_pd(exp_or_zero(mx - static_cast<double>(bm), T));
        for (auto& a : acc) a = _mm256_mul_pd(a, f);
      }
      mx = bm;
      started = true;
      if constexpr (kAllowed) thr = _mm256_set1_ps(threshold_below(bound, mx));
      lo = _mm256_set1_ps(threshold_up(mx + kFloor));
    }
    if constexpr (kAllowed) {
      uint32_t above = 0;
      for (int q = 0; q < 4; ++q) above |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(v[q], thr, _CMP_GT_OQ))) << (8 * q);
      uint32_t keep = static_cast<uint32_t>(allowed[b / 64] >> (b % 64)) & above;
      for (; keep; keep &= keep - 1) out[c++] = b + std::countr_zero(keep);
    }
    const __m256d m = _mm256_set1_pd(mx);
    int low = n != kBlock;
    for (int q = 0; q < 4; ++q) low |= _mm256_movemask_ps(_mm256_cmp_ps(v[q], lo, _CMP_LT_OQ));
    for (int q = 0; q < 4; ++q) {
      const __m256d dlo = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v[q])), m);
      const __m256d dhi = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v[q], 1)), m);
      acc[2 * q] = _mm256_add_pd(acc[2 * q], low ? exp_lanes4<true>(dlo, T) : exp_lanes4<false>(dlo, T));
      acc[2 * q + 1] = _mm256_add_pd(acc[2 * q + 1], low ? exp_lanes4<true>(dhi, T) : exp_lanes4<false>(dhi, T));
    }
  }
  alignas(32) double partial[kBlock];
  for (int a = 0; a < 8; ++a) _mm256_store_pd(partial + 4 * a, acc[a]);
  if (count) *count = c;
  return parts_of(partial, started, mx);
}

Isa best_isa() {
  static const Isa best = __builtin_cpu_supports("avx512f")                                         ? Isa::avx512
                          : (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? Isa::avx2
                                                                                               : Isa::portable;
  return best;
}
#else
Isa best_isa() { return Isa::portable; }
#endif
Isa isa() { return static_cast<Isa>(std::min(static_cast<int>(best_isa()), g_isa_cap.load(std::memory_order_relaxed))); }

template <bool kAllowed>
LogNormaliserParts pass(const float* x, int32_t V, const uint64_t* allowed, double bound, int32_t* out, int32_t* count, const char* who) {
  TS_CHECK(V >= 1, who << ": vocabulary of " << V << " tokens");
  TS_CHECK(!std::isnan(bound), who << ": the ranking bound is NaN");
#ifdef TRIESCOPE_LSE_AVX512
  if (isa() == Isa::avx512) return pass_avx512<kAllowed>(x, V, allowed, bound, out, count, who);
  if (isa() == Isa::avx2) return pass_avx2<kAllowed>(x, V, allowed, bound, out, count, who);
#endif
  return pass_portable<kAllowed>(x, V, allowed, bound, out, count, who);
}

}  // namespace

LogNormaliserParts row_log_normaliser_parts(const float* x, int32_t vocab, const char* who) {
  return pass<false>(x, vocab, nullptr, -kInf, nullptr, nullptr, who);
}

double row_log_normaliser(const float* x, int32_t vocab, const char* who) {
  const LogNormaliserParts p = row_log_normaliser_parts(x, vocab, who);
  return lse_math::finish(p.partial, p.started, p.mx);
}

double row_log_normaliser_allowed(const float* x, int32_t vocab, const uint64_t* allowed, double bound, int32_t* out_tokens,
                                  int32_t* count, const char* who) {
  const LogNormaliserParts p = pass<true>(x, vocab, allowed, bound, out_tokens, count, who);
  return lse_math::finish(p.partial, p.started, p.mx);
}

double log_normaliser_exp(double d) { return exp_or_zero(d, pow2_table()); }

const char* log_normaliser_isa() {
  switch (isa()) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::portable: break;
  }
  return "portable";
}

bool log_normaliser_use(const std::string& path) {
  const int cap = path == "portable" ? 0 : path == "avx2" ? 1 : path == "avx512" || path == "best" ? 2 : -1;
  TS_CHECK(cap >= 0, "log normaliser: no path \"" << path << "\" (best, avx512, avx2, portable)");
  g_isa_cap.store(cap, std::memory_order_relaxed);
  return path == "best" || path == log_normaliser_isa();
}

double log_softmax_lse(const float* logits, int32_t vocab) { return row_log_normaliser(logits, vocab, "log-softmax"); }

void log_softmax_row(const float* logits, int32_t vocab, double* out) {
  const double lse = log_softmax_lse(logits, vocab);
  for (int32_t v = 0; v < vocab; ++v) out[v] = static_cast<double>(logits[v]) - lse;
}

void log_softmax_rows(const std::vector<const float*>& rows, int32_t vocab, double* out, int32_t threads) {
  const int32_t n = static_cast<int32_t>(rows.size());
  auto one = [&](int32_t i) { log_softmax_row(rows[static_cast<size_t>(i)], vocab, out + static_cast<size_t>(i) * static_cast<size_t>(vocab)); };
  parallel_rows(n, one, threads, vocab);
}

}  // namespace triescope
