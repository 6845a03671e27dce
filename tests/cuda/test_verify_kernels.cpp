// Device verification against the CPU reference (needs a GPU; this
// executable exits 77 without one): Philox draws made in a kernel, DSBD
// layer verification, speculative chain verification, lookahead argmax +
// path, and whole CPU vs CUDA traces for every algorithm on synthetic
// models (every samples/*.json that has one, and random configurations).
// Tolerance: none. u, accept_prob, decisions, outputs, greedy tokens and
// paths must be bit-identical: the kernels run the CPU's IEEE operations in
// the CPU's order (cuda/dsbd_verify.h explains how).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <random>
#include <sstream>

#include "core/config/json_reader.h"
#include "core/decode/dsbd.h"
#include "core/decode/lookahead.h"
#include "core/decode/run_sample.h"
#include "core/decode/speculative.h"
#include "core/decode/tree_step.h"
#include "core/select/philox.h"
#include "core/trace/trace_diff.h"
#include "cuda/cuda_backend.h"
#include "cuda/philox_draws.cuh"
#include "device_util.h"
#include "random_samples.h"
#include "test_util.h"
#include "trace_util.h"

using namespace triescope;
using namespace triescope::testing;

namespace {
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<double> random_dist(std::mt19937_64& rng, size_t n, double zero_frac) {
  std::vector<double> p(n);
  double s = 0.0;
  for (auto& x : p) {
    x = std::bernoulli_distribution(zero_frac)(rng) ? 0.0 : std::exponential_distribution<double>(1.0)(rng);
    s += x;
  }
  if (s == 0.0) p[0] = s = 1.0;
  for (auto& x : p) x /= s;
  return p;
}
}  // namespace

TEST_CASE("kernel-drawn Philox uniforms equal core's philox_uniform bit for bit", "[cuda][philox]") {
  const int variant = GENERATE(range(0, 3));
  const uint64_t seed = test_seed(7000 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  const int64_t n = 200000;
  std::vector<uint64_t> seeds(static_cast<size_t>(n));
  std::vector<uint32_t> ctr(static_cast<size_t>(5 * n));
  for (int64_t i = 0; i < n; ++i) {
    seeds[static_cast<size_t>(i)] = rng();
    uint32_t* c = ctr.data() + 5 * i;
    c[0] = static_cast<uint32_t>(rng());
    c[1] = static_cast<uint32_t>(rng() % 70);
    c[2] = static_cast<uint32_t>(rng() % 5);
    c[3] = static_cast<uint32_t>(rng() % (1u << 24));
    c[4] = 1 + static_cast<uint32_t>(rng() % 4);
  }
  auto d_seed = upload(seeds);
  auto d_ctr = upload(ctr);
  auto d_out = poisoned<double>(static_cast<size_t>(n));
  cuda::PhiloxDrawsParams p;
  p.seed = d_seed.data();
  p.counter = d_ctr.data();
  p.n = n;
  p.out = d_out.data();
  cuda::philox_draws(p, 0);
  const auto got = download(d_out, static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t* c = ctr.data() + 5 * i;
    const double want = philox_uniform(PhiloxKey{seeds[static_cast<size_t>(i)]}, c[0], c[1], c[2], c[3], static_cast<RandStream>(c[4]));
    if (!same_bits(want, got[static_cast<size_t>(i)])) {
      CAPTURE(i, c[0], c[1], c[2], c[3], c[4], want, got[static_cast<size_t>(i)]);
      FAIL("kernel draw differs");
    }
  }
}

TEST_CASE("device DSBD layer verification equals dsbd_verify_layer exactly", "[cuda][dsbd]") {
  const int variant = GENERATE(range(0, 6));
  const uint64_t seed = test_seed(7100 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  auto dev = cuda::make_dsbd_verifier(cuda::VerifyExec::device);
  int passed = 0, short_layers = 0;
  for (int rep = 0; rep < 30; ++rep) {
    const size_t n = std::uniform_int_distribution<size_t>(1, variant < 3 ? 3000 : 200000)(rng);
    const std::vector<double> p = random_dist(rng, n, 0.3);
    std::vector<double> q = std::bernoulli_distribution(0.2)(rng) ? p : random_dist(rng, n, 0.3);
    std::vector<int64_t> drafts;
    const int32_t ws = std::uniform_int_distribution<int32_t>(0, 24)(rng);
    for (int32_t i = 0; i < ws; ++i) drafts.push_back(sample_index(q, std::uniform_real_distribution<double>(0.0, 1.0)(rng)));
    const int32_t width = std::uniform_int_distribution<int32_t>(1, ws + 3)(rng);
    const AcceptRatio ratio = std::bernoulli_distribution(0.8)(rng) ? AcceptRatio::p_over_q : AcceptRatio::q_over_p;
    const uint64_t key = rng();
    const auto step = static_cast<uint32_t>(rng() % 1000), layer = static_cast<uint32_t>(rng() % 9);
    CAPTURE(rep, n, ws, width);
    const LayerResult want = dsbd_verify_layer(p, q, drafts, width, ratio, [&](RandStream s, uint32_t d) {
      return philox_uniform(PhiloxKey{key}, step, layer, 0, d, s);
    });
    const LayerResult got = dev->verify_layer(p, q, drafts, width, ratio, key, step, layer);
    REQUIRE(want.tested.size() == got.tested.size());
    for (size_t i = 0; i < want.tested.size(); ++i) {
      CAPTURE(i);
      REQUIRE(want.tested[i].pair == got.tested[i].pair);
      REQUIRE(want.tested[i].accepted == got.tested[i].accepted);
      REQUIRE(same_bits(want.tested[i].u, got.tested[i].u));
      REQUIRE(same_bits(want.tested[i].accept_prob, got.tested[i].accept_prob));
    }
    REQUIRE(want.outputs == got.outputs);
    REQUIRE(want.passed == got.passed);
    passed += want.passed;
    short_layers += !want.passed;
  }
  CHECK(passed + short_layers == 30);
}

TEST_CASE("device speculative chain verification equals speculative_verify_chain exactly", "[cuda][spec]") {
  const int variant = GENERATE(range(0, 4));
  const uint64_t seed = test_seed(7200 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  auto dev = cuda::make_speculative_verifier(cuda::VerifyExec::device);
  for (int rep = 0; rep < 40; ++rep) {
    const size_t V = std::uniform_int_distribution<size_t>(1, 40000)(rng);
    const int32_t g = std::uniform_int_distribution<int32_t>(0, 6)(rng);
    std::vector<std::vector<double>> p, q;
    std::vector<int32_t> tokens;
    for (int32_t j = 0; j <= g; ++j) p.push_back(random_dist(rng, V, 0.3));
    for (int32_t j = 0; j < g; ++j) {
      q.push_back(random_dist(rng, V, 0.3));
      tokens.push_back(static_cast<int32_t>(sample_index(q.back(), std::uniform_real_distribution<double>(0, 1)(rng))));
    }
    const uint64_t key = rng();
    const auto it = static_cast<uint32_t>(rng() % 100);
    CAPTURE(rep, V, g);
    const SpecChainResult want = speculative_verify_chain(p, q, tokens, key, it);
    const SpecChainResult got = dev->verify_chain(p, q, tokens, key, it);
    REQUIRE(want.tested.size() == got.tested.size());
    for (size_t i = 0; i < want.tested.size(); ++i) {
      REQUIRE(want.tested[i].accepted == got.tested[i].accepted);
      REQUIRE(same_bits(want.tested[i].u, got.tested[i].u));
      REQUIRE(same_bits(want.tested[i].accept_prob, got.tested[i].accept_prob));
    }
    REQUIRE(want.accepted == got.accepted);
    REQUIRE(want.next_token == got.next_token);
    REQUIRE(want.from_residual == got.from_residual);
  }
}

TEST_CASE("device lookahead verification equals the host run and argmax_row", "[cuda][lookahead]") {
  const int variant = GENERATE(range(0, 4));
  const uint64_t seed = test_seed(7300 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  auto dev = cuda::make_lookahead_verifier(cuda::VerifyExec::device);
  auto host = cuda::make_lookahead_verifier(cuda::VerifyExec::host_twin);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int rep = 0; rep < 30; ++rep) {
    Logits lg;
    lg.rows = std::uniform_int_distribution<int32_t>(1, 80)(rng);
    lg.vocab = std::uniform_int_distribution<int32_t>(1, variant < 2 ? 600 : 40000)(rng);
    lg.data.resize(static_cast<size_t>(lg.rows) * static_cast<size_t>(lg.vocab));
    for (auto& x : lg.data) x = std::bernoulli_distribution(0.01)(rng) ? nan : static_cast<float>(std::uniform_int_distribution<int>(-40, 40)(rng)) / 8.0f;
    // candidates: a random forest under row 0 whose tokens often follow the greedy token
    std::vector<int32_t> cand_row, cand_parent, cand_token;
    const int32_t nc = lg.rows - 1;
    for (int32_t c = 0; c < nc; ++c) {
      cand_row.push_back(c + 1);
      cand_parent.push_back(std::uniform_int_distribution<int32_t>(-1, c - 1)(rng));
      const int32_t prow = cand_parent.back() < 0 ? 0 : cand_row[static_cast<size_t>(cand_parent.back())];
      cand_token.push_back(std::bernoulli_distribution(0.7)(rng) ? argmax_row(lg.row(prow), lg.vocab)
                                                                 : std::uniform_int_distribution<int32_t>(0, lg.vocab - 1)(rng));
    }
    CAPTURE(rep, lg.rows, lg.vocab);
    const LookaheadVerifyOutput want = host->verify(lg, 0, cand_row, cand_parent, cand_token);
    const LookaheadVerifyOutput got = dev->verify(lg, 0, cand_row, cand_parent, cand_token);
    for (int32_t r = 0; r < lg.rows; ++r) REQUIRE(want.greedy[static_cast<size_t>(r)] == argmax_row(lg.row(r), lg.vocab));
    REQUIRE(got.greedy == want.greedy);
    REQUIRE(got.matched == want.matched);
  }
}

TEST_CASE("CPU and CUDA traces are equivalent for every synthetic sample of every algorithm", "[cuda][trace]") {
  const std::vector<std::string> paths = sample_paths();
  std::set<std::string> algorithms;
  for (const auto& path : paths) {
    const json j = json_load_file(path);
    const std::string algo = j.value("algorithm", std::string());
    if (j["model"].value("type", std::string()) != "synthetic") continue;
    if (j.contains("draft_model") && j["draft_model"].value("type", std::string()) != "synthetic") continue;
    DYNAMIC_SECTION(path) {
      Sample cpu = sample_load(path), gpu = sample_load(path);
      cuda::sample_use_cuda(gpu);
      check_equivalent(run_trace(cpu), run_trace(gpu));
    }
    algorithms.insert(algo);
  }
  // today: trie beam search, beam sampling, speculative, dsbd, lookahead, multigen
  CHECK(algorithms.size() >= 6);
}

TEST_CASE("CPU and CUDA traces are equivalent for random configurations of every sampling / verifying algorithm", "[cuda][trace]") {
  const int variant = GENERATE(range(0, 6));
  const uint64_t seed = test_seed(7400 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  for (const json& j : random_samples(rng)) {
    DYNAMIC_SECTION(j.dump()) {
      Sample cpu = sample_parse(j, "random"), gpu = sample_parse(j, "random");
      cuda::sample_use_cuda(gpu);
      check_equivalent(run_trace(cpu), run_trace(gpu));
    }
  }
}
