// Twin cases of the device Philox (cuda/philox.cuh, drawn in a kernel by
// cuda/philox_draws.cu) against core's generator (core/select/philox.h): bit
// for bit, on the host (the __host__ __device__ code as host C++) and on the
// device (one kernel thread per draw).
#include <catch2/catch.hpp>

#include <array>
#include <cstring>

#include "core/select/philox.h"
#include "cuda/philox.cuh"
#include "cuda/philox_draws.cuh"
#include "device_util.h"
#include "twin_cases.h"

namespace triescope::testing {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// n draws: a key seed each and the counter (step, layer, beam, draw < 2^24, stream in 1..4).
struct DrawsIn {
  std::vector<uint64_t> seeds;   // [n]
  std::vector<uint32_t> counter; // [n x 5]
};
using Draws = std::vector<double>;

DrawsIn random_draws(std::mt19937_64& rng, const TwinPoint& pt) {
  const int64_t n = pt.on_host() ? 50000 : 200000;
  DrawsIn in;
  for (int64_t i = 0; i < n; ++i) {
    in.seeds.push_back(pt.variant == 0 ? static_cast<uint64_t>(i % 7) : rng());  // variant 0: few keys, many counters each
    in.counter.push_back(static_cast<uint32_t>(rng()));
    in.counter.push_back(static_cast<uint32_t>(rng() % 70));
    in.counter.push_back(static_cast<uint32_t>(rng() % 5));
    in.counter.push_back(static_cast<uint32_t>(rng() % (1u << 24)));
    in.counter.push_back(1 + static_cast<uint32_t>(rng() % 4));
  }
  return in;
}

Draws draws_cpu(const DrawsIn& in) {
  Draws out;
  for (size_t i = 0; i < in.seeds.size(); ++i) {
    const uint32_t* c = in.counter.data() + 5 * i;
    out.push_back(philox_uniform(PhiloxKey{in.seeds[i]}, c[0], c[1], c[2], c[3], static_cast<RandStream>(c[4])));
  }
  return out;
}

Draws draws_host(const DrawsIn& in, int32_t) {
  Draws out;
  for (size_t i = 0; i < in.seeds.size(); ++i) {
    const uint32_t* c = in.counter.data() + 5 * i;
    out.push_back(cuda::philox_uniform_hd({in.seeds[i], c[0], c[1], c[2]}, c[3], c[4]));
  }
  return out;
}

Draws draws_device(const DrawsIn& in) {
  const auto n = static_cast<int64_t>(in.seeds.size());
  auto d_seed = upload(in.seeds);
  auto d_ctr = upload(in.counter);
  auto d_out = poisoned<double>(static_cast<size_t>(n));
  cuda::PhiloxDrawsParams p;
  p.seed = d_seed.data();
  p.counter = d_ctr.data();
  p.n = n;
  p.out = d_out.data();
  cuda::philox_draws(p, 0);
  return download(d_out, static_cast<size_t>(n));
}

[[maybe_unused]] const bool draws = twin_register(TwinSpec<DrawsIn, Draws>{
    .name = "Philox uniforms equal philox_uniform bit for bit",
    .kernel = "cuda/philox_draws.cu",
    .tags = "[cuda][philox]",
    .host_variants = 4,
    .device_variants = 3,
    .inputs = random_draws,
    .cpu = draws_cpu,
    .host_twin = draws_host,
    .device = draws_device,
    .compare =
        [](const TwinPoint&, const DrawsIn& in, const Draws& want, const Draws& got) {
          REQUIRE(got.size() == want.size());
          for (size_t i = 0; i < want.size(); ++i)
            if (!same_bits(want[i], got[i])) {
              const uint32_t* c = in.counter.data() + 5 * i;
              CAPTURE(i, in.seeds[i], c[0], c[1], c[2], c[3], c[4], want[i], got[i]);
              FAIL("the device code's draw differs from philox_uniform");
            }
        },
});

// Philox4x32-10 blocks: Random123's known-answer vectors (kat_vectors,
// philox4x32_10) first, then random counters and keys.
using Block = std::array<uint32_t, 4>;
struct RoundsIn {
  std::vector<Block> counter;
  std::vector<std::array<uint32_t, 2>> key;
  std::vector<Block> known;  // the answers of the first known.size() entries
};
using Rounds = std::vector<Block>;

RoundsIn random_rounds(std::mt19937_64& rng, const TwinPoint&) {
  RoundsIn in;
  in.counter = {{0, 0, 0, 0}, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  in.key = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
  in.known = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
              {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
              {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
  for (int i = 0; i < 50000; ++i) {
    in.counter.push_back({static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())});
    in.key.push_back({static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())});
  }
  return in;
}

[[maybe_unused]] const bool rounds = twin_register(TwinSpec<RoundsIn, Rounds>{
    .name = "Philox4x32-10 blocks equal core's philox4x32_10, known answers included",
    .kernel = "cuda/philox.cuh",
    .tags = "[cuda][philox]",
    .host_variants = 4,
    .inputs = random_rounds,
    .cpu =
        [](const RoundsIn& in) {
          Rounds out;
          for (size_t i = 0; i < in.counter.size(); ++i) out.push_back(philox4x32_10(in.counter[i], in.key[i]));
          return out;
        },
    .host_twin =
        [](const RoundsIn& in, int32_t) {
          Rounds out = in.counter;
          for (size_t i = 0; i < out.size(); ++i) cuda::philox4x32_10_inplace(out[i].data(), in.key[i][0], in.key[i][1]);
          return out;
        },
    .compare =
        [](const TwinPoint&, const RoundsIn& in, const Rounds& want, const Rounds& got) {
          for (size_t i = 0; i < in.known.size(); ++i) {
            CAPTURE(i);
            CHECK(want[i] == in.known[i]);
            CHECK(got[i] == in.known[i]);
          }
          REQUIRE(got.size() == want.size());
          for (size_t i = 0; i < want.size(); ++i)
            if (got[i] != want[i]) FAIL("philox4x32_10_inplace differs at " << i);
        },
});

}  // namespace
}  // namespace triescope::testing
