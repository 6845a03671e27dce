// The device verification code (cuda/philox.cuh, cuda/dsbd_verify.h,
// cuda/lookahead_verify.h) is __host__ __device__: here it runs on the CPU,
// with a block of one thread and with real host threads meeting at a
// std::barrier where the kernel calls __syncthreads(), against core's
// reference on fresh random inputs. Exact equality everywhere (bits of u and
// accept_prob included): the device code does the CPU's IEEE operations in
// the CPU's order. What this cannot check is the GPU's own arithmetic and
// scheduling: triescope_tests_cuda does that on a device.
#include <catch2/catch.hpp>

#include <barrier>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "core/config/json_reader.h"
#include "core/decode/dsbd.h"
#include "core/decode/lookahead.h"
#include "core/decode/multigen.h"
#include "core/decode/run_sample.h"
#include "core/decode/speculative.h"
#include "core/decode/tree_step.h"
#include "core/model/synthetic_model.h"
#include "core/select/philox.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_verifiers.h"
#include "cuda/cuda_common.cuh"
#include "cuda/dsbd_verify.h"
#include "cuda/lookahead_verify.h"
#include "cuda/philox.cuh"
#include "random_samples.h"
#include "test_util.h"
#include "trace_util.h"

using namespace triescope;
using namespace triescope::testing;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A block of `n` host threads; sync() is a barrier, as __syncthreads().
struct BarrierBlock {
  int64_t t;
  int64_t n;
  std::barrier<>* bar;
  int64_t tid() const { return t; }
  int64_t size() const { return n; }
  void sync() { bar->arrive_and_wait(); }
};
template <class F>
void run_block(int64_t n, F body) {
  if (n == 1) {
    cuda::SerialBlock b;
    body(b);
    return;
  }
  std::barrier<> bar(n);
  std::vector<std::thread> ts;
  for (int64_t t = 0; t < n; ++t)
    ts.emplace_back([&, t] {
      BarrierBlock b{t, n, &bar};
      body(b);
    });
  for (auto& th : ts) th.join();
}

// A distribution over n entries with exact zeros (warped-out pairs) and ties.
std::vector<double> random_dist(std::mt19937_64& rng, size_t n, double zero_frac) {
  std::vector<double> p(n);
  double s = 0.0;
  for (auto& x : p) {
    x = std::bernoulli_distribution(zero_frac)(rng) ? 0.0 : std::exponential_distribution<double>(1.0)(rng);
    if (std::bernoulli_distribution(0.05)(rng)) x = 0.125;  // exact ties
    s += x;
  }
  if (s == 0.0) p[0] = s = 1.0;
  for (auto& x : p) x /= s;
  return p;
}

}  // namespace

TEST_CASE("device Philox4x32-10 equals core's generator bit for bit", "[cuda][philox]") {
  // Known-answer vectors of Random123 (kat_vectors, philox4x32_10).
  struct Kat {
    uint32_t c[4], k[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}, {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}, {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& kat : kats) {
    uint32_t x[4] = {kat.c[0], kat.c[1], kat.c[2], kat.c[3]};
    cuda::philox4x32_10_inplace(x, kat.k[0], kat.k[1]);
    const auto core = philox4x32_10({kat.c[0], kat.c[1], kat.c[2], kat.c[3]}, {kat.k[0], kat.k[1]});
    for (int i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(x[i] == kat.out[i]);
      CHECK(core[static_cast<size_t>(i)] == kat.out[i]);
    }
  }
  const int variant = GENERATE(range(0, 4));
  const uint64_t seed = test_seed(100 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 50000; ++i) {
    const uint64_t key_seed = variant == 0 ? static_cast<uint64_t>(i % 7) : rng();
    const uint32_t step = static_cast<uint32_t>(rng()), layer = static_cast<uint32_t>(rng() % 70);
    const uint32_t beam = static_cast<uint32_t>(rng() % 5), draw = static_cast<uint32_t>(rng() % (1u << 24));
    const uint32_t stream = 1 + static_cast<uint32_t>(rng() % 4);
    const double want = philox_uniform(PhiloxKey{key_seed}, step, layer, beam, draw, static_cast<RandStream>(stream));
    const double got = cuda::philox_uniform_hd({key_seed, step, layer, beam}, draw, stream);
    if (!same_bits(want, got)) {
      CAPTURE(i, key_seed, step, layer, beam, draw, stream, want, got);
      FAIL("philox_uniform_hd differs from philox_uniform");
    }
    uint32_t c[4] = {static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())};
    const uint32_t k0 = static_cast<uint32_t>(rng()), k1 = static_cast<uint32_t>(rng());
    const auto core = philox4x32_10({c[0], c[1], c[2], c[3]}, {k0, k1});
    cuda::philox4x32_10_inplace(c, k0, k1);
    if (!(c[0] == core[0] && c[1] == core[1] && c[2] == core[2] && c[3] == core[3])) FAIL("philox4x32_10_inplace differs at " << i);
  }
}

namespace {

// One random DSBD layer: drafts iid from q (as dsbd_decode draws them) or
// arbitrary pairs, random width, both ratios.
struct LayerCase {
  std::vector<double> p, q;
  std::vector<int64_t> drafts;
  int32_t width = 1;
  AcceptRatio ratio = AcceptRatio::p_over_q;
  uint64_t seed = 0;
  uint32_t step = 0, layer = 0;
};
LayerCase random_layer(std::mt19937_64& rng) {
  LayerCase c;
  const size_t n = std::uniform_int_distribution<size_t>(1, 3000)(rng);
  c.p = random_dist(rng, n, std::uniform_real_distribution<double>(0.0, 0.7)(rng));
  const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
  if (kind == 0) {
    c.q = c.p;  // q == p: every draft accepted
  } else if (kind == 1) {  // q close to p: the residual runs dry (p' = q)
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

LayerResult cpu_layer(const LayerCase& c) {
  const PhiloxKey key{c.seed};
  return dsbd_verify_layer(c.p, c.q, c.drafts, c.width, c.ratio,
                           [&](RandStream s, uint32_t d) { return philox_uniform(key, c.step, c.layer, 0, d, s); });
}

void require_same(const LayerResult& a, const LayerResult& b) {
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

}  // namespace

TEST_CASE("device DSBD layer verification, run on the host, equals dsbd_verify_layer exactly", "[cuda][dsbd]") {
  const int64_t threads = GENERATE(1, 3, 8);
  const int variant = GENERATE(range(0, 6));
  const uint64_t seed = test_seed(200 + static_cast<uint64_t>(variant) * 10 + static_cast<uint64_t>(threads));
  CAPTURE(threads, variant, seed);
  std::mt19937_64 rng(seed);
  int passed = 0, short_layers = 0, rejections = 0;
  for (int rep = 0; rep < 40; ++rep) {
    CAPTURE(rep);
    const LayerCase c = random_layer(rng);
    CAPTURE(c.p.size(), c.drafts.size(), c.width);
    const LayerResult want = cpu_layer(c);
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
    require_same(want, got);
    passed += want.passed;
    short_layers += !want.passed;
    for (const auto& d : want.tested) rejections += !d.accepted;
    // the verifier object the cuda backend installs, host run
    if (threads == 1) require_same(want, cuda::make_dsbd_verifier(cuda::VerifyExec::host_twin)
                                             ->verify_layer(c.p, c.q, c.drafts, c.width, c.ratio, c.seed, c.step, c.layer));
  }
  // the cases exercised both endings and the residual update
  CHECK(passed > 0);
  CHECK(short_layers > 0);
  CHECK(rejections > 0);
}

TEST_CASE("device DSBD verification flags a draft outside the domain", "[cuda][dsbd]") {
  const std::vector<double> p = {0.5, 0.5}, q = {0.5, 0.5};
  auto v = cuda::make_dsbd_verifier(cuda::VerifyExec::host_twin);
  CHECK_THROWS_WITH(v->verify_layer(p, q, {0, 2}, 1, AcceptRatio::p_over_q, 1, 1, 1), Catch::Contains("outside the domain"));
  CHECK_THROWS_WITH(v->verify_layer(p, q, {0}, 0, AcceptRatio::p_over_q, 1, 1, 1), Catch::Contains("width must be >= 1"));
}

TEST_CASE("device speculative chain verification, run on the host, equals speculative_verify_chain exactly", "[cuda][spec]") {
  const int64_t threads = GENERATE(1, 4);
  const int variant = GENERATE(range(0, 4));
  const uint64_t seed = test_seed(300 + static_cast<uint64_t>(variant) * 10 + static_cast<uint64_t>(threads));
  CAPTURE(threads, variant, seed);
  std::mt19937_64 rng(seed);
  int rejected = 0, all_accepted = 0;
  for (int rep = 0; rep < 60; ++rep) {
    CAPTURE(rep);
    const size_t V = std::uniform_int_distribution<size_t>(1, 500)(rng);
    const int32_t g = std::uniform_int_distribution<int32_t>(0, 6)(rng);
    std::vector<std::vector<double>> p, q;
    std::vector<int32_t> tokens;
    for (int32_t j = 0; j <= g; ++j) p.push_back(random_dist(rng, V, 0.3));
    for (int32_t j = 0; j < g; ++j) {
      q.push_back(std::bernoulli_distribution(0.3)(rng) ? p[static_cast<size_t>(j)] : random_dist(rng, V, 0.3));
      tokens.push_back(static_cast<int32_t>(sample_index(q.back(), std::uniform_real_distribution<double>(0, 1)(rng))));
    }
    const uint64_t key = rng();
    const auto it = static_cast<uint32_t>(rng() % 100);
    SpecChainResult want;
    try {
      want = speculative_verify_chain(p, q, tokens, key, it);
    } catch (const Error&) {
      continue;  // p == q at a rejection cannot happen (a rejection needs p < q somewhere, so p > q elsewhere)
    }
    SpecChainResult got;
    if (threads == 1) {
      got = cuda::make_speculative_verifier(cuda::VerifyExec::host_twin)->verify_chain(p, q, tokens, key, it);
    } else {
      std::vector<double> pf, qf, resid(V);
      for (auto& r : p) pf.insert(pf.end(), r.begin(), r.end());
      for (auto& r : q) qf.insert(qf.end(), r.begin(), r.end());
      std::vector<cuda::VerifyDecision> tested(std::max<size_t>(tokens.size(), 1));
      int32_t counts[4] = {-1, -1, -1, -1}, from = -1;
      cuda::SpecVerifyArgs a{};
      a.p = pf.data();
      a.q = qf.data();
      a.tokens = tokens.data();
      a.g = g;
      a.vocab = static_cast<int32_t>(V);
      a.draws = {key, it, 0, 0};
      a.resid = resid.data();
      a.tested = tested.data();
      a.counts = counts;
      a.from = &from;
      cuda::VerifyShared sh{};
      run_block(threads, [&](auto& blk) { cuda::speculative_verify_block(a, sh, blk); });
      REQUIRE(counts[3] == 0);
      for (int32_t i = 0; i < counts[0]; ++i) got.tested.push_back({tested[static_cast<size_t>(i)].accept_prob, tested[static_cast<size_t>(i)].u,
                                                                    tested[static_cast<size_t>(i)].accepted != 0});
      got.accepted = counts[1];
      got.next_token = counts[2];
      got.from_residual = from != 0;
    }
    REQUIRE(want.tested.size() == got.tested.size());
    for (size_t i = 0; i < want.tested.size(); ++i) {
      CAPTURE(i);
      REQUIRE(want.tested[i].accepted == got.tested[i].accepted);
      REQUIRE(same_bits(want.tested[i].accept_prob, got.tested[i].accept_prob));
      REQUIRE(same_bits(want.tested[i].u, got.tested[i].u));
    }
    REQUIRE(want.accepted == got.accepted);
    REQUIRE(want.next_token == got.next_token);
    REQUIRE(want.from_residual == got.from_residual);
    rejected += want.from_residual;
    all_accepted += !want.from_residual;
  }
  CHECK(rejected > 0);
  CHECK(all_accepted > 0);
}

TEST_CASE("device argmax equals argmax_row, NaN, infinities, signed zeros and ties included", "[cuda][lookahead]") {
  const int64_t threads = GENERATE(1, 2, 5, 16);
  const int variant = GENERATE(range(0, 3));
  const uint64_t seed = test_seed(400 + static_cast<uint64_t>(variant) * 100 + static_cast<uint64_t>(threads));
  CAPTURE(threads, variant, seed);
  std::mt19937_64 rng(seed);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, inf, -inf, 0.0f, -0.0f, 1.0f, -1.0f};
  for (int rep = 0; rep < 80; ++rep) {
    const int32_t V = std::uniform_int_distribution<int32_t>(1, 300)(rng);
    std::vector<float> row(static_cast<size_t>(V));
    for (auto& x : row) {
      const int k = std::uniform_int_distribution<int>(0, 9)(rng);
      x = k < 7 ? specials[k] : static_cast<float>(std::uniform_int_distribution<int>(-3, 3)(rng));
    }
    if (rep % 5 == 0) row[0] = nan;
    std::vector<float> s_val(static_cast<size_t>(threads));
    std::vector<int32_t> s_idx(static_cast<size_t>(threads));
    int32_t got = -1;
    run_block(threads, [&](auto& blk) {
      const int32_t g = cuda::argmax_row_block(row.data(), V, s_val.data(), s_idx.data(), blk);
      if (blk.tid() == 0) got = g;
    });
    CAPTURE(rep, V);
    REQUIRE(got == argmax_row(row.data(), V));
  }
}

namespace {

// Runs one sample on the CPU reference and with the cuda backend's verifiers
// run on the host; the traces must be identical record for record.
void check_sample_with_host_verifiers(Sample& cpu, Sample& twin) {
  cuda::verifiers_install(twin.options.verifiers, cuda::VerifyExec::host_twin);
  REQUIRE(twin.options.verifiers.kinds().size() >= 3);  // dsbd_layers, lookahead_candidates, speculative_chain
  MemoryTraceSink a, b;
  std::ostringstream ra, rb;
  run_sample(cpu, &a, ra);
  run_sample(twin, &b, rb);
  REQUIRE(a.records.size() == b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    CAPTURE(i);
    json x = a.records[i], y = b.records[i];
    x.erase("seconds");
    y.erase("seconds");
    REQUIRE(x == y);
  }
  REQUIRE(ra.str() == rb.str());
}

}  // namespace

TEST_CASE("decoders give identical traces with the device verifiers run on the host, every verifying sample", "[cuda][trace]") {
  const std::vector<std::string> paths = sample_paths();
  int ran = 0;
  for (const auto& path : paths) {
    const json j = json_load_file(path);
    const std::string algo = j.value("algorithm", std::string());
    if (algo != "dsbd" && algo != "speculative" && algo != "lookahead" && algo != "greedy") continue;
    if (j["model"].value("type", std::string()) == "transformer") continue;  // not built here without LibTorch
    DYNAMIC_SECTION(path) {
      Sample cpu = sample_load(path), twin = sample_load(path);
      check_sample_with_host_verifiers(cpu, twin);
    }
    ++ran;
  }
  CHECK(ran >= 4);  // dsbd_synthetic, dsbd_figure3, speculative_synthetic, lookahead_repetitive
}

TEST_CASE("decoders give identical traces with the device verifiers run on the host, random configurations", "[cuda][trace]") {
  const int variant = GENERATE(range(0, 8));
  const uint64_t seed = test_seed(500 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  const std::vector<json> samples = random_samples(rng);
  for (const json& j : samples) {
    DYNAMIC_SECTION(j.dump()) {
      Sample cpu = sample_parse(j, "random"), twin = sample_parse(j, "random");
      check_sample_with_host_verifiers(cpu, twin);
    }
  }
}

TEST_CASE("the cuda backend accepts every algorithm and refuses models without a CUDA twin, naming the file", "[cuda][trace]") {
  const std::string dir = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/";
  // a scripted target: refused before any device is touched
  for (const char* name : {"figure1_once_upon_a_time.json", "multigen_figure1.json", "dsbd_figure3.json"}) {
    CAPTURE(name);
    Sample s = sample_load(dir + name);
    CHECK_THROWS_WITH(cuda::sample_use_cuda(s), Catch::Contains(name) && Catch::Contains("model type \"scripted\""));
  }
  // a synthetic target with a scripted draft: the draft is named
  json j = json_load_file(dir + "dsbd_synthetic.json");
  j["draft_model"] = json_load_file(dir + "dsbd_figure3.json")["draft_model"];
  j["model"]["vocab_size"] = j["draft_model"]["vocab"].size();
  j["prompt"] = {0};
  Sample s = sample_parse(j, "mixed.json");
  CHECK_THROWS_WITH(cuda::sample_use_cuda(s), Catch::Contains("mixed.json") && Catch::Contains("draft_model type \"scripted\""));
  // every synthetic sample, whatever its algorithm: wired, so only a missing device can refuse it
  std::string why;
  const bool device = cuda::device_count(&why) > 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    const json sj = json_load_file(e.path().string());
    if (sj["model"].value("type", std::string()) != "synthetic") continue;
    CAPTURE(e.path().string());
    Sample t = sample_load(e.path().string());
    if (device) {
      cuda::sample_use_cuda(t);
      CHECK(t.options.backend == cuda::kBackendName);
      CHECK(t.options.verifiers.find<DsbdLayerVerifier>(kVerifyDsbdLayers));
      CHECK(t.options.verifiers.find<SpeculativeVerifier>(kVerifySpeculativeChain));
      CHECK(t.options.verifiers.find<LookaheadVerifier>(kVerifyLookahead));
    } else {
      CHECK_THROWS_WITH(cuda::sample_use_cuda(t), Catch::Contains(e.path().filename().string()) && Catch::Contains("no usable CUDA device"));
    }
  }
}

TEST_CASE("device lookahead path equals the CPU's walk: first longest chain, or the trie path", "[cuda][lookahead]") {
  const int variant = GENERATE(range(0, 4));
  const uint64_t seed = test_seed(600 + static_cast<uint64_t>(variant));
  CAPTURE(variant, seed);
  std::mt19937_64 rng(seed);
  int ties = 0;
  for (int rep = 0; rep < 300; ++rep) {
    const bool trie = rep % 2 == 0;
    const int32_t V = std::uniform_int_distribution<int32_t>(2, 5)(rng);  // few tokens: shared prefixes and ties
    // candidate n-grams (the pool's), most of them following the greedy tokens
    const int32_t G = std::uniform_int_distribution<int32_t>(0, 6)(rng), L = std::uniform_int_distribution<int32_t>(1, 4)(rng);
    std::vector<std::vector<int32_t>> cands(static_cast<size_t>(G));
    for (auto& c : cands)
      for (int32_t i = 0; i < L; ++i) c.push_back(std::uniform_int_distribution<int32_t>(0, V - 1)(rng));
    // lay them out as lookahead_decode does: row 0 = root, then the candidate nodes
    std::vector<int32_t> cand_row, cand_parent, cand_token;
    std::vector<std::vector<int32_t>> chains;  // independent: candidate indices per chain
    std::map<std::pair<int32_t, int32_t>, int32_t> child;  // trie: (parent index, token) -> index
    for (const auto& c : cands) {
      chains.emplace_back();
      int32_t parent = -1;
      for (int32_t tok : c) {
        int32_t idx;
        if (trie) {
          auto it = child.find({parent, tok});
          if (it != child.end()) {
            parent = it->second;
            continue;
          }
          idx = static_cast<int32_t>(cand_row.size());
          child[{parent, tok}] = idx;
        } else {
          idx = static_cast<int32_t>(cand_row.size());
          chains.back().push_back(idx);
        }
        cand_row.push_back(idx + 1);
        cand_parent.push_back(parent);
        cand_token.push_back(tok);
        parent = idx;
      }
    }
    const int32_t rows = static_cast<int32_t>(cand_row.size()) + 1;
    std::vector<int32_t> greedy(static_cast<size_t>(rows));
    for (auto& g : greedy) g = std::uniform_int_distribution<int32_t>(0, V - 1)(rng);
    // the CPU's walk (core/decode/lookahead.cpp)
    auto greedy_after = [&](int32_t c) { return greedy[static_cast<size_t>(c < 0 ? 0 : cand_row[static_cast<size_t>(c)])]; };
    std::vector<int32_t> want;
    if (!trie) {
      for (const auto& ch : chains) {
        std::vector<int32_t> mm;
        int32_t g = greedy_after(-1);
        for (int32_t c : ch) {
          if (cand_token[static_cast<size_t>(c)] != g) break;
          mm.push_back(c);
          g = greedy_after(c);
        }
        if (mm.size() > want.size()) want = mm;
        else if (!mm.empty() && mm.size() == want.size()) ++ties;
      }
    } else {
      for (int32_t node = -1;;) {
        auto it = child.find({node, greedy_after(node)});
        if (it == child.end()) break;
        want.push_back(it->second);
        node = it->second;
      }
    }
    std::vector<int32_t> depth(cand_row.size() + 1), matched(cand_row.size() + 1);
    int32_t num = -1, err = -1;
    cuda::LookaheadVerifyArgs a;
    a.rows = rows;
    a.root_row = 0;
    a.cand_row = cand_row.data();
    a.cand_parent = cand_parent.data();
    a.cand_token = cand_token.data();
    a.num_cands = static_cast<int32_t>(cand_row.size());
    a.greedy = greedy.data();
    a.depth = depth.data();
    a.matched = matched.data();
    a.num_matched = &num;
    a.error = &err;
    cuda::lookahead_match_serial(a);
    CAPTURE(rep, trie, cands);
    REQUIRE(err == 0);
    REQUIRE(std::vector<int32_t>(matched.begin(), matched.begin() + num) == want);
  }
  CHECK(ties > 0);  // equal-length chain matches happened: the tie rule was exercised
}
