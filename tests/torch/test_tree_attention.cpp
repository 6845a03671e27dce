// The tree attention CPU twin (core/model/tree_attention.h), the reference the
// CUDA kernel is checked against: against masked softmax attention written
// with LibTorch ops in double, and through TorchTransformer's "tree_kernel"
// mode against its dense / gather / hybrid paths and in the decoders.
// ATen first: it brings glog, whose CHECK (abort on failure) must not replace Catch's.
#include <ATen/ATen.h>
#undef CHECK
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "core/decode/tree_step.h"
#include "core/config/json_reader.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/dsbd.h"
#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"
#include "core/model/model_factory.h"
#include "core/trace/trace.h"
#include "core/decode/trie_beam_search.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/tree_attention.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;

namespace {
// A random slot cache and mask: rows allow random slots (density varies per
// row, one row allows a single slot), the cache holds `capacity` >= num_slots
// slots so the V block's offset (capacity x row) is exercised.
struct Case {
  int32_t q, heads, kv_heads, hd, slots, capacity;
  std::vector<float> qv, kv;
  BitMask mask;
};
Case random_case(std::mt19937_64& rng, int32_t q, int32_t heads, int32_t kv_heads, int32_t hd, int32_t slots) {
  Case c{q, heads, kv_heads, hd, slots, slots + static_cast<int32_t>(rng() % 7), {}, {}, BitMask(q, slots)};
  std::normal_distribution<float> n(0.0f, 1.5f);  // wide enough that softmax is far from uniform
  c.qv.resize(static_cast<size_t>(q * heads * hd));
  for (auto& x : c.qv) x = n(rng);
  c.kv.resize(static_cast<size_t>(2 * c.capacity * kv_heads * hd));
  for (auto& x : c.kv) x = n(rng);
  for (int32_t r = 0; r < q; ++r) {
    const double p = r == 0 ? 0.0 : std::uniform_real_distribution<double>(0.05, 1.0)(rng);
    c.mask.set(r, static_cast<int32_t>(rng() % static_cast<uint64_t>(slots)));
    for (int32_t s = 0; s < slots; ++s)
      if (std::bernoulli_distribution(p)(rng)) c.mask.set(r, s);
  }
  return c;
}
}  // namespace

TEST_CASE("tree attention twin equals masked softmax attention (LibTorch, double)", "[model][tree_attention]") {
  const uint64_t seed = GENERATE(11u, 12u, 13u);
  const int32_t kv_heads = GENERATE(1, 2, 4);
  const int32_t group = GENERATE(1, 2, 4);
  const int32_t hd = GENERATE(8, 24);
  CAPTURE(seed, kv_heads, group, hd);
  std::mt19937_64 rng(seed);
  const int32_t q = 1 + static_cast<int32_t>(rng() % 9), slots = 1 + static_cast<int32_t>(rng() % 150);
  const Case c = random_case(rng, q, kv_heads * group, kv_heads, hd, slots);
  CAPTURE(q, slots, c.capacity);
  const AncestorCsr csr = ancestor_csr(c.mask);
  // The CSR lists are exactly the rows' set bits, ascending.
  for (int32_t r = 0; r < q; ++r) {
    std::vector<int32_t> want;
    for (int32_t s = 0; s < slots; ++s)
      if (c.mask.test(r, s)) want.push_back(s);
    CHECK(std::vector<int32_t>(csr.slot_ids.begin() + csr.indptr[static_cast<size_t>(r)],
                               csr.slot_ids.begin() + csr.indptr[static_cast<size_t>(r) + 1]) == want);
  }
  TreeAttentionArgs a;
  a.q = c.qv.data();
  a.kv = c.kv.data();
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  std::vector<float> outf(c.qv.size());
  a.out = outf.data();
  a.num_queries = q;
  a.heads = c.heads;
  a.kv_heads = kv_heads;
  a.head_dim = hd;
  a.capacity = c.capacity;
  a.max_row = csr.max_row;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  std::vector<double> out;
  tree_attention_ref(a, out);

  // The same function from LibTorch ops: every query against every slot, the
  // mask as an additive -inf matrix, GQA by repeating KV heads.
  const auto d = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor kv = at::from_blob(const_cast<float*>(c.kv.data()), {2, c.capacity, kv_heads, hd}, at::kFloat).to(at::kDouble);
  const at::Tensor K = kv[0].narrow(0, 0, slots).repeat_interleave(group, 1).permute({1, 0, 2});  // [heads, slots, hd]
  const at::Tensor V = kv[1].narrow(0, 0, slots).repeat_interleave(group, 1).permute({1, 0, 2});
  const at::Tensor Q = at::from_blob(const_cast<float*>(c.qv.data()), {q, c.heads, hd}, at::kFloat).to(at::kDouble).permute({1, 0, 2});
  at::Tensor add = at::full({q, slots}, -std::numeric_limits<double>::infinity(), d);
  for (int32_t r = 0; r < q; ++r)
    for (int32_t s = 0; s < slots; ++s)
      if (c.mask.test(r, s)) add[r][s] = 0.0;
  const at::Tensor sc = at::matmul(Q, K.transpose(1, 2)) * static_cast<double>(a.scale) + add;
  const at::Tensor ref = at::matmul(at::softmax(sc, -1), V).permute({1, 0, 2}).contiguous();  // [q, heads, hd]
  const double* rp = ref.data_ptr<double>();
  double worst = 0.0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(out[i] - rp[i]));
  CHECK(worst <= 1e-12);
  // The float form is the same numbers rounded.
  tree_attention_host(a);
  for (size_t i = 0; i < out.size(); ++i) REQUIRE(outf[i] == static_cast<float>(out[i]));

  // The test can fail: dropping one allowed slot of a row that has two or
  // more changes that row's output.
  for (int32_t r = 0; r < q; ++r)
    if (csr.indptr[static_cast<size_t>(r) + 1] - csr.indptr[static_cast<size_t>(r)] >= 2) {
      AncestorCsr cut = csr;
      cut.slot_ids.erase(cut.slot_ids.begin() + cut.indptr[static_cast<size_t>(r)]);
      for (size_t k = static_cast<size_t>(r) + 1; k < cut.indptr.size(); ++k) --cut.indptr[k];
      TreeAttentionArgs b = a;
      b.indptr = cut.indptr.data();
      b.slot_ids = cut.slot_ids.data();
      std::vector<double> o2;
      tree_attention_ref(b, o2);
      double moved = 0.0;
      for (int64_t i = 0; i < int64_t{c.heads} * hd; ++i) {
        const size_t k = static_cast<size_t>(int64_t{r} * c.heads * hd + i);
        moved = std::max(moved, std::fabs(o2[k] - out[k]));
      }
      CHECK(moved > 1e-6);
      break;
    }
}

TEST_CASE("tree attention twin: a slot outside the cache and a bad CSR are named errors", "[model][tree_attention]") {
  std::vector<float> qv(2 * 2 * 4, 0.5f), kv(2 * 3 * 2 * 4, 0.25f), out(qv.size());  // room for kv_heads 2 below
  std::vector<int32_t> ptr = {0, 1, 3}, ids = {0, 1, 3};  // query 1, list index 1: slot 3 of a 3-slot cache
  TreeAttentionArgs a;
  a.q = qv.data();
  a.kv = kv.data();
  a.indptr = ptr.data();
  a.slot_ids = ids.data();
  a.out = out.data();
  a.num_queries = 2;
  a.heads = 2;
  a.kv_heads = 1;
  a.head_dim = 4;
  a.capacity = 3;
  a.max_row = 2;
  a.scale = 0.5f;
  std::vector<double> o;
  CHECK_THROWS_WITH(tree_attention_ref(a, o), Catch::Contains("query 1 list index 1: slot 3 outside [0, 3)"));
  ids[2] = 2;
  CHECK_NOTHROW(tree_attention_ref(a, o));
  a.max_row = 1;
  CHECK_THROWS_WITH(tree_attention_ref(a, o), Catch::Contains("more than max_row"));
  a.max_row = 2;
  ptr = {0, 2, 1};
  CHECK_THROWS_WITH(tree_attention_ref(a, o), Catch::Contains("indptr[2] = 1 < indptr[1] = 2"));
  ptr = {0, 1, 3};
  a.kv_heads = 2;  // 2 query heads over 2 KV heads is fine; 3 is not a multiple
  CHECK_NOTHROW(tree_attention_ref(a, o));
  a.heads = 3;
  CHECK_THROWS_WITH(tree_attention_ref(a, o), Catch::Contains("multiple of kv_heads"));
}

namespace {
// A star step (MultiGen / trie shape): a causal prompt, then k chains under
// its last token, fed in two further forwards.
struct Star {
  TokenTree t;
  std::vector<int32_t> prompt, tips, second;
};
Star make_star(std::mt19937& rng, int32_t prompt_len, int32_t k, int32_t vocab) {
  Star s;
  std::vector<int32_t> toks;
  for (int32_t i = 0; i < prompt_len; ++i) toks.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)));
  s.prompt = s.t.add_chain(kNoNode, toks);
  for (int32_t i = 0; i < k; ++i) s.tips.push_back(s.t.add_child(s.prompt.back(), static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)), 0.0));
  for (int32_t i = 0; i < k; ++i)
    s.second.push_back(s.t.add_child(s.tips[static_cast<size_t>(i)], static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)), 0.0));
  int32_t slot = 0;
  for (const auto* g : {&s.prompt, &s.tips, &s.second})
    for (int32_t id : *g) s.t.node(id).slot = slot++;
  return s;
}
StepInput step_of(const TokenTree& t, const std::vector<int32_t>& nodes, int32_t shared) {
  StepInput in = tree_step_input(t, nodes, t.node(nodes.back()).slot + 1);
  in.shared_prefix_slots = shared;
  return in;
}
}  // namespace

TEST_CASE("transformer attention tree_kernel (CPU twin) equals dense and hybrid on star steps", "[model][tree_attention]") {
  const uint32_t seed = GENERATE(3u, 4u);
  const int32_t kv_heads = GENERATE(4, 2, 1);
  CAPTURE(seed, kv_heads);
  const LlamaConfig c = tiny_config(4, kv_heads);
  auto tk = tiny_model(c, seed, "tree_kernel");
  auto dense = tiny_model(c, seed, "dense");
  auto hybrid = tiny_model(c, seed, "auto");
  std::mt19937 rng(seed);
  const Star s = make_star(rng, 11, 4, c.vocab_size);
  Logits a, b, h;
  int32_t shared = 0;
  for (const auto* g : {&s.prompt, &s.tips, &s.second}) {
    tk->forward(step_of(s.t, *g, shared), a);
    dense->forward(step_of(s.t, *g, 0), b);
    hybrid->forward(step_of(s.t, *g, shared), h);  // MultiGen's hint: prompt slots read by every query
    CHECK(tk->last_attention() == "tree_kernel");
    for (int32_t r = 0; r < a.rows; ++r) {
      CHECK(max_abs_diff(a.row(r), b.row(r), c.vocab_size) <= 1e-4f);
      CHECK(max_abs_diff(a.row(r), h.row(r), c.vocab_size) <= 1e-4f);
    }
    shared = static_cast<int32_t>(s.prompt.size());
  }
  CHECK(hybrid->last_attention() == "hybrid");
}

TEST_CASE("trie beam search with tree_kernel attention equals batch beam search with dense attention", "[model][tree_attention]") {
  const uint32_t seed = GENERATE(5u, 6u);
  const int32_t gc = GENERATE(0, 3);
  CAPTURE(seed, gc);
  const LlamaConfig c = tiny_config(4, 2);
  auto tk = tiny_model(c, seed, "tree_kernel");
  auto dense = tiny_model(c, seed, "dense");
  BeamConfig cfg;
  cfg.num_beams = 3;
  cfg.max_new_tokens = 6;
  cfg.eos_token = -1;
  cfg.gc_interval = gc;
  const std::vector<int32_t> prompt = {5, 17, 3, 60, 2};
  check_hypotheses_close(trie_beam_search(*tk, prompt, cfg), batch_beam_search(*dense, prompt, cfg), 1e-4);
  CHECK(tk->last_attention() == "tree_kernel");
}

TEST_CASE("attention tree_kernel: describe() says so; auto on the CPU keeps the LibTorch paths", "[model][tree_attention]") {
  const LlamaConfig c = tiny_config(4, 2);
  auto tk = tiny_model(c, 1, "tree_kernel");
  CHECK(tk->describe()["attention"] == "tree_kernel");
  auto au = tiny_model(c, 1, "auto");
  run_causal(*au, {1, 2, 3});
  CHECK(au->last_attention() == "dense");
  TransformerOptions o;
  o.attention = "tree";
  CHECK_THROWS_WITH(TorchTransformer(c, llama_random_weights(c, 1, 0.2), o), Catch::Contains("\"tree_kernel\""));
}

TEST_CASE("lookahead verification with tree_kernel attention equals greedy decoding with dense attention", "[model][tree_attention]") {
  const uint32_t seed = GENERATE(1u, 2u);
  const auto verify = GENERATE(LookaheadVerify::independent, LookaheadVerify::trie);
  CAPTURE(seed, static_cast<int>(verify));
  const LlamaConfig c = tiny_config(4, 2, 48);
  auto tk = tiny_model(c, seed, "tree_kernel");
  auto dense = tiny_model(c, seed, "dense");
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 18; ++i) prompt.push_back((i % 5) + 3);  // repetitive: n-gram candidates get verified
  const LookaheadResult g = greedy_decode(*dense, prompt, 24);
  const LookaheadConfig cfg = test_lookahead_config(24, verify);
  const LookaheadResult la = lookahead_decode(*tk, prompt, cfg);
  CHECK(tk->last_attention() == "tree_kernel");
  CHECK(la.tokens == g.tokens);
}

TEST_CASE("dsbd forest verification with tree_kernel attention gives the dense path's target log-probs", "[spec][model][tree_attention]") {
  const uint64_t seed = GENERATE(3ull, 4ull);
  CAPTURE(seed);
  auto obj = [](const std::string& attention, bool draft) {
    nlohmann::json j = {{"type", "transformer"},
                        {"random_init",
                         {{"vocab_size", 48}, {"hidden_size", 32}, {"intermediate_size", 72}, {"num_hidden_layers", 2},
                          {"num_attention_heads", 4}, {"num_key_value_heads", 2}}},
                        {"seed", 11},
                        {"init_std", 0.2},
                        {"attention", attention}};
    if (draft) j["keep_layers"] = 1;
    torch_models_register();
    return model_from_json(JsonObjectReader(j, "pair.json", "model"));
  };
  DsbdConfig cfg;
  cfg.draft_width = 4;
  cfg.gamma = 3;
  cfg.dynamic = true;
  cfg.threshold = 0.7;
  cfg.min_width = 2;
  cfg.max_new_tokens = 12;
  cfg.sampling.seed = seed;
  const std::vector<int32_t> prompt = {5, 9, 2, 7, 30, 11};
  MemoryTraceSink a, b;
  auto ta = obj("tree_kernel", false), da = obj("tree_kernel", true), tb = obj("dense", false), db = obj("dense", true);
  const DsbdResult ra = dsbd_decode(*ta, *da, prompt, cfg, &a);
  const DsbdResult rb = dsbd_decode(*tb, *db, prompt, cfg, &b);
  // The same accept/reject decisions (fixed seeds; the log-probs agree to ~1e-6,
  // far from any Philox threshold here), the same target log-probs within 1e-4,
  // the same sequences (scores within 1e-4: the sums differ in the last bits).
  std::vector<nlohmann::json> va, vb;
  for (const auto& r : a.records)
    if (r.value("kind", "") == "step" && r.value("phase", "") == "verify") va.push_back(r["target_logprob"]);
  for (const auto& r : b.records)
    if (r.value("kind", "") == "step" && r.value("phase", "") == "verify") vb.push_back(r["target_logprob"]);
  REQUIRE(!va.empty());
  double worst = 0.0;
  for (size_t i = 0; i < std::min(va.size(), vb.size()); ++i) {
    CAPTURE(i, va[i].dump(), vb[i].dump());
    REQUIRE(va[i].size() == vb[i].size());
    for (size_t k = 0; k < va[i].size(); ++k) {
      CHECK(va[i][k][0] == vb[i][k][0]);
      worst = std::max(worst, std::fabs(va[i][k][1].get<double>() - vb[i][k][1].get<double>()));
    }
  }
  CHECK(worst <= 1e-4);
  CHECK(va.size() == vb.size());
  const auto& ha = ra.out.decode.hypotheses;
  const auto& hb = rb.out.decode.hypotheses;
  REQUIRE(ha.size() == hb.size());
  for (size_t i = 0; i < ha.size(); ++i) {
    CHECK(ha[i].tokens == hb[i].tokens);
    CHECK(std::fabs(ha[i].sum_logprobs - hb[i].sum_logprobs) <= 1e-4);
  }
}
