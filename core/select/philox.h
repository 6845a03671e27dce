// Counter-based randomness for the sampling decoders: Philox4x32-10
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
// A draw is a pure function of (seed, step, layer, beam, draw), so a run is
// reproducible from its seed alone and a CUDA twin can draw the same numbers
// in any thread order: no generator state is carried between draws.
#pragma once
#include <array>
#include <cstdint>

namespace triescope {

// One Philox4x32-10 block: 10 rounds over a 128-bit counter with a 64-bit key.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// What a draw is for; folded into the counter so the streams never overlap.
enum class RandStream : uint32_t {
  draft_sample = 1,     // the draft model's beam sampling (DSBD drafting, speculative drafting)
  verify_accept = 2,    // r ~ U(0, 1) of Algorithm 1 line 16
  residual_sample = 3,  // a beam from p' (Algorithm 1 line 27)
  target_sample = 4,    // a beam from p_beam (Algorithm 1 lines 29, 34; plain beam sampling)
};

struct PhiloxKey {
  uint64_t seed = 0;
  // Counter words: c0 = draw | stream << 24, c1 = beam, c2 = layer, c3 = step.
  // The layout is part of the trace contract: changing it changes every trace.
  std::array<uint32_t, 4> counter(uint32_t step, uint32_t layer, uint32_t beam, uint32_t draw, RandStream s) const;
};

// U[0, 1) with 53 random bits from the first two output words.
double philox_uniform(const PhiloxKey& key, uint32_t step, uint32_t layer, uint32_t beam, uint32_t draw, RandStream s);

}  // namespace triescope
