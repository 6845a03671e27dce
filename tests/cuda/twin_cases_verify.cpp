// Twin cases of the device verification (cuda/dsbd_verify.cu: DSBD layers and
// speculative chains, over cuda/dsbd_verify.h) against core's reference
// (dsbd_verify_layer, speculative_verify_chain). Host twin: the
// __host__ __device__ block body with a block of one thread or real host
// threads meeting at a std::barrier where the kernel calls __syncthreads()
// (and, with one thread, the verifier object the cuda backend installs, run
// on the host); device: that verifier object run on the device. Exact
// equality everywhere, bits of u and accept_prob included: the device code
// does the CPU's IEEE operations in the CPU's order (cuda/dsbd_verify.h).
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>

#include "core/common/error.h"
#include "core/decode/dsbd.h"
#include "core/decode/speculative.h"
#include "core/select/philox.h"
#include "cuda/dsbd_verify.h"
#include "host_block.h"
#include "test_util.h"
#include "twin_cases.h"

namespace triescope::testing {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One random DSBD layer: drafts iid from q (as dsbd_decode draws them) or
// arbitrary pairs, random width, both ratios; q == p, q close to p (the
// residual runs dry) or another distribution.
struct LayerCase {
  std::vector<double> p, q;
  std::vector<int64_t> drafts;
  int32_t width = 1;
  AcceptRatio ratio = AcceptRatio::p_over_q;
  uint64_t seed = 0;
  uint32_t step = 0, layer = 0;
};
using Layers = std::vector<LayerCase>;
using LayerResults = std::vector<LayerResult>;

LayerCase random_layer(std::mt19937_64& rng, size_t max_n) {
  LayerCase c;
  const size_t n = std::uniform_int_distribution<size_t>(1, max_n)(rng);
  c.p = random_dist(rng, n, std::uniform_real_distribution<double>(0.0, 0.7)(rng));
  const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
  if (kind == 0) {
    c.q = c.p;  // q == p: every draft accepted
  } else if (kind == 1) {
    c.q = c.p;
    for (auto& x : c.q) x *= 1.0 + 1e-3 * std::uniform_real_distribution<double>(-1, 1)(rng);
  } else {
    c.q = random_dist(rng, n, std::uniform_real_distribution<double>(0.0, 0.7)(rng));
  }
  const int32_t ws = std::uniform_int_distribution<int32_t>(0, 24)(rng);
  for (int32_t i = 0; i < ws; ++i) {
    if (kind == 3 && std::bernoulli_distribution(0.3)(rng)) c.drafts.push_back(std::uniform_int_distribution<int64_t>(0, static_cast<int64_t>(n) - 1)(rng));
    else c.drafts.push_back(sample_index(c.q, std::uniform_real_distribution<double>(0.0, 1.0)(rng)));
  }
  c.width = std::uniform_int_distribution<int32_t>(1, ws + 3)(rng);
  c.ratio = std::bernoulli_distribution(0.8)(rng) ? AcceptRatio::p_over_q : AcceptRatio::q_over_p;
  c.seed = rng();
  c.step = static_cast<uint32_t>(rng() % 1000);
  c.layer = static_cast<uint32_t>(rng() % 9);
  return c;
}

// Host: 40 layers of up to 3000 entries; device: 30, of up to 200000 in variants 3 to 5.
Layers random_layers(std::mt19937_64& rng, const TwinPoint& pt) {
  const size_t max_n = !pt.on_host() && pt.variant >= 3 ? 200000 : 3000;
  Layers layers;
  for (int rep = 0, reps = pt.on_host() ? 40 : 30; rep < reps; ++rep) layers.push_back(random_layer(rng, max_n));
  return layers;
}

LayerResults layers_cpu(const Layers& layers) {
  LayerResults out;
  for (const LayerCase& c : layers) {
    const PhiloxKey key{c.seed};
    out.push_back(dsbd_verify_layer(c.p, c.q, c.drafts, c.width, c.ratio,
                                    [&](RandStream s, uint32_t d) { return philox_uniform(key, c.step, c.layer, 0, d, s); }));
  }
  return out;
}

void require_same_layer(const LayerResult& a, const LayerResult& b) {
  REQUIRE(a.tested.size() == b.tested.size());
  for (size_t i = 0; i < a.tested.size(); ++i) {
    CAPTURE(i);
    REQUIRE(a.tested[i].pair == b.tested[i].pair);
    REQUIRE(a.tested[i].draft == b.tested[i].draft);
    REQUIRE(a.tested[i].accepted == b.tested[i].accepted);
    REQUIRE(same_bits(a.tested[i].accept_prob, b.tested[i].accept_prob));
    REQUIRE(same_bits(a.tested[i].u, b.tested[i].u));
  }
  REQUIRE(a.outputs == b.outputs);
  REQUIRE(a.passed == b.passed);
}

LayerResult layer_block(const LayerCase& c, int32_t threads) {
  std::vector<double> pp(c.p.size());
  std::vector<cuda::VerifyDecision> tested(std::max<size_t>(c.drafts.size(), 1));
  std::vector<int64_t> outputs(static_cast<size_t>(c.width), -7);
  int32_t counts[4] = {-1, -1, -1, -1};
  cuda::DsbdVerifyArgs a{};
  a.p = c.p.data();
  a.q = c.q.data();
  a.n = static_cast<int64_t>(c.p.size());
  a.drafts = c.drafts.data();
  a.num_drafts = static_cast<int32_t>(c.drafts.size());
  a.width = c.width;
  a.ratio_q_over_p = c.ratio == AcceptRatio::q_over_p;
  a.draws = {c.seed, c.step, c.layer, 0};
  a.pp = pp.data();
  a.tested = tested.data();
  a.outputs = outputs.data();
  a.counts = counts;
  cuda::VerifyShared sh{};
  run_block(threads, [&](auto& blk) { cuda::dsbd_verify_block(a, sh, blk); });
  REQUIRE(counts[3] == 0);
  LayerResult got;
  for (int32_t i = 0; i < counts[0]; ++i) {
    const auto& d = tested[static_cast<size_t>(i)];
    got.tested.push_back({d.pair, d.draft, d.accept_prob, d.u, d.accepted != 0});
  }
  got.outputs.assign(outputs.begin(), outputs.begin() + counts[1]);
  got.passed = counts[2] != 0;
  return got;
}

LayerResults layers_verifier(const Layers& layers, cuda::VerifyExec exec) {
  auto v = cuda::make_dsbd_verifier(exec);
  LayerResults out;
  for (const LayerCase& c : layers) out.push_back(v->verify_layer(c.p, c.q, c.drafts, c.width, c.ratio, c.seed, c.step, c.layer));
  return out;
}

LayerResults layers_host(const Layers& layers, int32_t threads) {
  LayerResults out;
  for (const LayerCase& c : layers) out.push_back(layer_block(c, threads));
  if (threads == 1) {  // the verifier object the cuda backend installs, host run: the same results
    const LayerResults object = layers_verifier(layers, cuda::VerifyExec::host_twin);
    for (size_t i = 0; i < out.size(); ++i) require_same_layer(out[i], object[i]);
  }
  return out;
}

void layers_compare(const TwinPoint& pt, const Layers& layers, const LayerResults& want, const LayerResults& got) {
  REQUIRE(got.size() == want.size());
  int passed = 0, short_layers = 0, rejections = 0;
  for (size_t rep = 0; rep < want.size(); ++rep) {
    CAPTURE(rep, layers[rep].p.size(), layers[rep].drafts.size(), layers[rep].width);
    require_same_layer(want[rep], got[rep]);
    passed += want[rep].passed;
    short_layers += !want[rep].passed;
    for (const auto& d : want[rep].tested) rejections += !d.accepted;
  }
  if (pt.on_host()) {  // the cases exercised both endings and the residual update
    CHECK(passed > 0);
    CHECK(short_layers > 0);
    CHECK(rejections > 0);
  }
}

[[maybe_unused]] const bool dsbd = twin_register(TwinSpec<Layers, LayerResults>{
    .name = "DSBD layer verification equals dsbd_verify_layer exactly",
    .kernel = "cuda/dsbd_verify.cu",
    .tags = "[cuda][dsbd]",
    .host_variants = 6,
    .host_threads = {1, 3, 8},
    .device_variants = 6,
    .inputs = random_layers,
    .cpu = layers_cpu,
    .host_twin = layers_host,
    .device = [](const Layers& layers) { return layers_verifier(layers, cuda::VerifyExec::device); },
    .compare = layers_compare,
});

// A speculative chain: g drafts from q (q == p at a draft with probability
// 0.3), p over g + 1 positions.
struct ChainCase {
  std::vector<std::vector<double>> p, q;
  std::vector<int32_t> tokens;
  uint64_t key = 0;
  uint32_t it = 0;
};
using Chains = std::vector<ChainCase>;
using ChainResults = std::vector<SpecChainResult>;

// Host: 60 chains over up to 500 tokens; device: 40, up to 40000. A chain
// the CPU refuses is left out (p == q at a rejection cannot happen: a
// rejection needs p < q somewhere, so p > q elsewhere).
Chains random_chains(std::mt19937_64& rng, const TwinPoint& pt) {
  Chains chains;
  const size_t max_v = pt.on_host() ? 500 : 40000;
  for (int rep = 0, reps = pt.on_host() ? 60 : 40; rep < reps; ++rep) {
    ChainCase c;
    const size_t V = std::uniform_int_distribution<size_t>(1, max_v)(rng);
    const int32_t g = std::uniform_int_distribution<int32_t>(0, 6)(rng);
    for (int32_t j = 0; j <= g; ++j) c.p.push_back(random_dist(rng, V, 0.3));
    for (int32_t j = 0; j < g; ++j) {
      c.q.push_back(std::bernoulli_distribution(0.3)(rng) ? c.p[static_cast<size_t>(j)] : random_dist(rng, V, 0.3));
      c.tokens.push_back(static_cast<int32_t>(sample_index(c.q.back(), std::uniform_real_distribution<double>(0, 1)(rng))));
    }
    c.key = rng();
    c.it = static_cast<uint32_t>(rng() % 100);
    try {
      speculative_verify_chain(c.p, c.q, c.tokens, c.key, c.it);
    } catch (const Error&) {
      continue;
    }
    chains.push_back(std::move(c));
  }
  return chains;
}

SpecChainResult chain_block(const ChainCase& c, int32_t threads) {
  const auto V = c.p[0].size();
  std::vector<double> pf, qf, resid(V);
  for (auto& r : c.p) pf.insert(pf.end(), r.begin(), r.end());
  for (auto& r : c.q) qf.insert(qf.end(), r.begin(), r.end());
  std::vector<cuda::VerifyDecision> tested(std::max<size_t>(c.tokens.size(), 1));
  int32_t counts[4] = {-1, -1, -1, -1}, from = -1;
  cuda::SpecVerifyArgs a{};
  a.p = pf.data();
  a.q = qf.data();
  a.tokens = c.tokens.data();
  a.g = static_cast<int32_t>(c.tokens.size());
  a.vocab = static_cast<int32_t>(V);
  a.draws = {c.key, c.it, 0, 0};
  a.resid = resid.data();
  a.tested = tested.data();
  a.counts = counts;
  a.from = &from;
  cuda::VerifyShared sh{};
  run_block(threads, [&](auto& blk) { cuda::speculative_verify_block(a, sh, blk); });
  REQUIRE(counts[3] == 0);
  SpecChainResult got;
  for (int32_t i = 0; i < counts[0]; ++i) {
    const auto& d = tested[static_cast<size_t>(i)];
    got.tested.push_back({d.accept_prob, d.u, d.accepted != 0});
  }
  got.accepted = counts[1];
  got.next_token = counts[2];
  got.from_residual = from != 0;
  return got;
}

ChainResults chains_verifier(const Chains& chains, cuda::VerifyExec exec) {
  auto v = cuda::make_speculative_verifier(exec);
  ChainResults out;
  for (const ChainCase& c : chains) out.push_back(v->verify_chain(c.p, c.q, c.tokens, c.key, c.it));
  return out;
}

void chains_compare(const TwinPoint& pt, const Chains& chains, const ChainResults& want, const ChainResults& got) {
  REQUIRE(got.size() == want.size());
  int rejected = 0, all_accepted = 0;
  for (size_t rep = 0; rep < want.size(); ++rep) {
    CAPTURE(rep, chains[rep].p[0].size(), chains[rep].tokens.size());
    REQUIRE(want[rep].tested.size() == got[rep].tested.size());
    for (size_t i = 0; i < want[rep].tested.size(); ++i) {
      CAPTURE(i);
      REQUIRE(want[rep].tested[i].accepted == got[rep].tested[i].accepted);
      REQUIRE(same_bits(want[rep].tested[i].accept_prob, got[rep].tested[i].accept_prob));
      REQUIRE(same_bits(want[rep].tested[i].u, got[rep].tested[i].u));
    }
    REQUIRE(want[rep].accepted == got[rep].accepted);
    REQUIRE(want[rep].next_token == got[rep].next_token);
    REQUIRE(want[rep].from_residual == got[rep].from_residual);
    rejected += want[rep].from_residual;
    all_accepted += !want[rep].from_residual;
  }
  if (pt.on_host()) {  // both endings exercised
    CHECK(rejected > 0);
    CHECK(all_accepted > 0);
  }
}

[[maybe_unused]] const bool speculative = twin_register(TwinSpec<Chains, ChainResults>{
    .name = "speculative chain verification equals speculative_verify_chain exactly",
    .kernel = "cuda/dsbd_verify.cu",
    .tags = "[cuda][spec]",
    .host_variants = 4,
    .host_threads = {1, 4},
    .device_variants = 4,
    .inputs = random_chains,
    .cpu =
        [](const Chains& chains) {
          ChainResults out;
          for (const ChainCase& c : chains) out.push_back(speculative_verify_chain(c.p, c.q, c.tokens, c.key, c.it));
          return out;
        },
    .host_twin =
        [](const Chains& chains, int32_t threads) {
          if (threads == 1) return chains_verifier(chains, cuda::VerifyExec::host_twin);  // the object the backend installs
          ChainResults out;
          for (const ChainCase& c : chains) out.push_back(chain_block(c, threads));
          return out;
        },
    .device = [](const Chains& chains) { return chains_verifier(chains, cuda::VerifyExec::device); },
    .compare = chains_compare,
});

}  // namespace
}  // namespace triescope::testing
