#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "core/decode/beam_config.h"
#include "core/decode/sampling.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/synthetic_model.h"
#include "core/select/philox.h"
#include "stats_util.h"

using namespace triescope;

TEST_CASE("philox4x32-10 matches the Random123 known-answer vectors", "[spec]") {
  // Random123 kat_vectors, philox4x32 with 10 rounds: counter, key -> output.
  struct Kat { std::array<uint32_t, 4> ctr; std::array<uint32_t, 2> key; std::array<uint32_t, 4> out; };
  const Kat kats[] = {
      {{0u, 0u, 0u, 0u}, {0u, 0u}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}, {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}, {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    CAPTURE(k.ctr[0], k.key[0]);
    CHECK(philox4x32_10(k.ctr, k.key) == k.out);
  }
}

TEST_CASE("philox uniforms: in the unit interval, keyed by every counter field, roughly uniform", "[spec]") {
  const uint64_t seed = GENERATE(0ull, 1ull, 0xdeadbeefcafeull);
  CAPTURE(seed);
  const PhiloxKey key{seed};
  std::set<double> seen;
  double sum = 0.0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double u = philox_uniform(key, 1, 2, 3, static_cast<uint32_t>(i), RandStream::verify_accept);
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    seen.insert(u);
  }
  CHECK(seen.size() == static_cast<size_t>(n));
  CHECK(std::abs(sum / n - 0.5) < 4.0 * std::sqrt(1.0 / 12.0 / n));
  const double base = philox_uniform(key, 1, 2, 3, 4, RandStream::verify_accept);
  CHECK(base != philox_uniform(key, 2, 2, 3, 4, RandStream::verify_accept));
  CHECK(base != philox_uniform(key, 1, 3, 3, 4, RandStream::verify_accept));
  CHECK(base != philox_uniform(key, 1, 2, 4, 4, RandStream::verify_accept));
  CHECK(base != philox_uniform(key, 1, 2, 3, 5, RandStream::verify_accept));
  CHECK(base != philox_uniform(key, 1, 2, 3, 4, RandStream::draft_sample));
  CHECK(base != philox_uniform(PhiloxKey{seed + 1}, 1, 2, 3, 4, RandStream::verify_accept));
  CHECK(base == philox_uniform(key, 1, 2, 3, 4, RandStream::verify_accept));
}

TEST_CASE("warps: temperature, top-k and top-p on a known distribution", "[spec]") {
  const std::vector<double> lw = {std::log(0.5), std::log(0.25), std::log(0.15), std::log(0.1)};
  SamplingConfig w;
  auto p = warp_log_weights(lw, w);
  CHECK(p[0] == Approx(0.5));
  CHECK(p[3] == Approx(0.1));
  w.temperature = 0.5;  // p^2, renormalised
  p = warp_log_weights(lw, w);
  const double z = 0.25 + 0.0625 + 0.0225 + 0.01;
  CHECK(p[0] == Approx(0.25 / z));
  CHECK(p[2] == Approx(0.0225 / z));
  w.temperature = 1.0;
  w.top_k = 2;
  p = warp_log_weights(lw, w);
  CHECK(p[0] == Approx(2.0 / 3.0));
  CHECK(p[2] == 0.0);
  CHECK(p[3] == 0.0);
  w.top_k = 0;
  w.top_p = 0.8;  // 0.5 + 0.25 < 0.8 <= 0.9: three tokens
  p = warp_log_weights(lw, w);
  CHECK(p[2] == Approx(0.15 / 0.9));
  CHECK(p[3] == 0.0);
  w.top_p = 0.5;  // the first token alone reaches 0.5
  p = warp_log_weights(lw, w);
  CHECK(p[0] == Approx(1.0));
}

TEST_CASE("beam distribution is Eq. 1: joint likelihoods normalised over beams x vocabulary", "[spec]") {
  const std::vector<double> beam_lp = {std::log(0.6), std::log(0.3)};
  const std::vector<double> tok = {std::log(0.5), std::log(0.5), std::log(0.9), std::log(0.1)};
  const auto p = beam_distribution(beam_lp, tok, 2, SamplingConfig{});
  const double P = 0.6 * 0.5 + 0.6 * 0.5 + 0.3 * 0.9 + 0.3 * 0.1;
  CHECK(p[0] == Approx(0.3 / P));
  CHECK(p[2] == Approx(0.27 / P));
  CHECK(p[3] == Approx(0.03 / P));
}

TEST_CASE("sample_index draws each index with its probability and never a zero one", "[spec]") {
  const std::vector<double> prob = {0.1, 0.0, 0.45, 0.3, 0.0, 0.15};
  std::vector<int64_t> counts(prob.size(), 0);
  const PhiloxKey key{7};
  for (uint32_t i = 0; i < 20000; ++i) ++counts[static_cast<size_t>(sample_index(prob, philox_uniform(key, 0, 0, 0, i, RandStream::target_sample)))];
  CHECK(counts[1] == 0);
  CHECK(counts[4] == 0);
  const auto c = test::chi_square(counts, prob);
  CAPTURE(c.stat, c.df);
  CHECK(c.stat < test::chi_square_critical(c.df));
  CHECK(sample_index(prob, 0.0) == 0);
  CHECK(sample_index(prob, 0.999999999) == 5);
}

TEST_CASE("deterministic beam sampling (top-W) equals trie beam search without EOS", "[spec]") {
  const uint64_t seed = GENERATE(1ull, 2ull, 3ull);
  const int32_t W = GENERATE(1, 2, 4);
  CAPTURE(seed, W);
  SyntheticConfig c;
  c.vocab_size = 48;
  c.seed = seed;
  SyntheticModel m(c);
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
  BeamConfig cfg;
  cfg.num_beams = W;
  cfg.max_new_tokens = 12;
  SamplingConfig s;
  s.deterministic = true;
  const auto bs = beam_sampling(m, prompt, cfg, s);
  const auto tb = trie_beam_search(m, prompt, cfg);
  REQUIRE(bs.decode.hypotheses.size() == tb.hypotheses.size());
  for (size_t i = 0; i < tb.hypotheses.size(); ++i) {
    CAPTURE(i);
    CHECK(bs.decode.hypotheses[i].tokens == tb.hypotheses[i].tokens);
    CHECK(bs.decode.hypotheses[i].sum_logprobs == Approx(tb.hypotheses[i].sum_logprobs).epsilon(1e-12));
  }
  CHECK(bs.sampling.target_calls == cfg.max_new_tokens);  // prefill + one pass per step but the last
}

TEST_CASE("beam sampling: same seed same output, different seeds differ, GC keeps the beams' paths only", "[spec]") {
  SyntheticConfig c;
  c.vocab_size = 32;
  c.seed = 11;
  c.peakiness_q8 = 128;
  SyntheticModel m(c);
  const std::vector<int32_t> prompt = {1, 2, 3};
  BeamConfig cfg;
  cfg.num_beams = 4;
  cfg.max_new_tokens = 20;
  cfg.gc_interval = 4;
  SamplingConfig s;
  s.seed = 5;
  const auto a = beam_sampling(m, prompt, cfg, s);
  const auto b = beam_sampling(m, prompt, cfg, s);
  s.seed = 6;
  const auto d = beam_sampling(m, prompt, cfg, s);
  REQUIRE(a.decode.hypotheses.size() == b.decode.hypotheses.size());
  for (size_t i = 0; i < a.decode.hypotheses.size(); ++i) CHECK(a.decode.hypotheses[i].tokens == b.decode.hypotheses[i].tokens);
  CHECK(a.decode.hypotheses.front().tokens != d.decode.hypotheses.front().tokens);
  CHECK(a.decode.metrics.gc_runs == 4);
  CHECK(a.decode.metrics.peak_slots < a.decode.metrics.batch_peak_slots);
}
