#include "core/select/philox.h"

#include "core/common/error.h"

namespace triescope {

namespace {
// Constants of Philox4x32 (Salmon et al. 2011, Table 2 / Random123 philox.h).
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // key schedule: bump by the Weyl constants between rounds
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

std::array<uint32_t, 4> PhiloxKey::counter(uint32_t step, uint32_t layer, uint32_t beam, uint32_t draw, RandStream s) const {
  TS_CHECK(draw < (1u << 24), "philox: draw index " << draw << " exceeds 2^24");
  return {draw | (static_cast<uint32_t>(s) << 24), beam, layer, step};
}

double philox_uniform(const PhiloxKey& key, uint32_t step, uint32_t layer, uint32_t beam, uint32_t draw, RandStream s) {
  const auto out = philox4x32_10(key.counter(step, layer, beam, draw, s),
                                 {static_cast<uint32_t>(key.seed), static_cast<uint32_t>(key.seed >> 32)});
  const uint64_t bits = (static_cast<uint64_t>(out[0]) << 21) ^ (static_cast<uint64_t>(out[1]) >> 11);  // 53 bits
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace triescope
