// The query counts a device model's decode forward is shaped for: a step's
// queries are padded up to the next bucket, as serving engines do, so one
// CUDA graph captured per bucket replays every step (issue 33, item 3). The
// prefill and anything past the largest bucket run eagerly.
#pragma once
#include <array>
#include <cstdint>

namespace triescope {

inline constexpr std::array<int32_t, 10> kDecodeBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

// The smallest bucket holding q queries (q >= 1); 0 when q is past the largest.
constexpr int32_t decode_bucket(int32_t q) {
  for (int32_t b : kDecodeBuckets)
    if (q <= b) return b;
  return 0;
}

}  // namespace triescope
