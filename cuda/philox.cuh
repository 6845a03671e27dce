// Philox4x32-10 for device code, drawing exactly the numbers core's
// philox_uniform (core/select/philox.cpp) draws, so a kernel can make the same
// accept/reject decisions as the CPU reference. Inline __host__ __device__
// functions, no kernels: a CPU test compiles this header with g++ and compares
// it bit for bit against core's generator (tests/cuda/test_cpu_twins.cpp).
// Written from the paper (Salmon et al., SC'11, Fig. 2 and Table 2), not
// from core's code: a reference must not share code with what it checks.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define TS_HD __host__ __device__
#else
#define TS_HD
#endif

namespace triescope::cuda {

// The counter layout is the trace contract of core/select/philox.h:
// c0 = draw | stream << 24, c1 = beam, c2 = layer, c3 = step; key = seed (lo, hi).
enum PhiloxStream : uint32_t {
  kStreamDraftSample = 1,
  kStreamVerifyAccept = 2,
  kStreamResidualSample = 3,
  kStreamTargetSample = 4,
};

// Where a decoder's draws for one verification come from.
struct PhiloxCoords {
  uint64_t seed = 0;
  uint32_t step = 0;   // the decoder's iteration (c3)
  uint32_t layer = 0;  // Algorithm 1's layer l (c2)
  uint32_t beam = 0;   // c1
};

TS_HD inline uint32_t philox_mulhi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// Ten rounds of the Philox S-box over x[0..3] with key (k0, k1), in place.
TS_HD inline void philox4x32_10_inplace(uint32_t x[4], uint32_t k0, uint32_t k1) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;  // Table 2, Philox4x32
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;  // Weyl key bumps
  for (int r = 0; r < 10; ++r) {
    const uint32_t hi0 = philox_mulhi(M0, x[0]), lo0 = M0 * x[0];
    const uint32_t hi1 = philox_mulhi(M1, x[2]), lo1 = M1 * x[2];
    const uint32_t y0 = hi1 ^ x[1] ^ k0, y2 = hi0 ^ x[3] ^ k1;
    x[0] = y0;
    x[1] = lo1;
    x[2] = y2;
    x[3] = lo0;
    k0 += W0;  // the bump after the last round is never used
    k1 += W1;
  }
}

// U[0, 1) from the first two output words: 53 bits, (w0 << 21) ^ (w1 >> 11).
// The only floating-point operation is one exact multiply by 2^-53.
TS_HD inline double philox_uniform_hd(const PhiloxCoords& c, uint32_t draw, uint32_t stream) {
  uint32_t x[4] = {(draw & 0xFFFFFFu) | (stream << 24), c.beam, c.layer, c.step};
  philox4x32_10_inplace(x, static_cast<uint32_t>(c.seed & 0xFFFFFFFFu), static_cast<uint32_t>(c.seed >> 32));
  const uint64_t hi = static_cast<uint64_t>(x[0]) << 21;
  const uint64_t lo = static_cast<uint64_t>(x[1]) >> 11;
  const uint64_t bits = (hi ^ lo) & 0x1FFFFFFFFFFFFFull;
  return static_cast<double>(bits) * 0x1p-53;
}

// The host's "block" of one thread, for running the block-cooperative
// __host__ __device__ algorithms (cuda/dsbd_verify.h, lookahead_verify.h)
// on the CPU: tid() = 0, size() = 1, sync() does nothing.
struct SerialBlock {
  int64_t tid() const { return 0; }
  int64_t size() const { return 1; }
  void sync() {}
};

}  // namespace triescope::cuda
