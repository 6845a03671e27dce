// SplitMix64 (Steele, Lea, Flood 2014): the one integer mix of core/ (the
// synthetic model's hash, lookahead's window seed, random checkpoints).
// cuda/synthetic_logits.cu keeps its own device copy of the finaliser; keep the two equal.
#pragma once
#include <cstdint>

namespace triescope {

inline constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ull;

// The finaliser of x + gamma: a good integer mix with no floating point.
inline uint64_t splitmix64(uint64_t x) {
  x += kSplitMix64Gamma;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The SplitMix64 generator: splitmix64 of a state advanced by gamma per draw.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    const uint64_t r = splitmix64(state);
    state += kSplitMix64Gamma;
    return r;
  }
  // Uniform in the open interval (0, 1) from the top 53 bits.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
};

}  // namespace triescope
