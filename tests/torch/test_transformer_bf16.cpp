// The transformer in bfloat16 (docs/transformer.md, "dtype"): its logits
// within a stated tolerance of the float32 model's on the same weights, on
// every attention path the CPU runs; a trie beam search whose choices differ
// from float32's only where float32's scores are within that tolerance; the
// dtype in describe() and the trace header; a bad dtype refused by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include "core/decode/tree_step.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/model_factory.h"
#include "core/trace/trace.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;

namespace {
// bfloat16 keeps 8 significant bits: one rounding moves a value by at most
// u = 2^-9 of it. Each layer rounds its activations a handful of times (the
// projections' outputs, RoPE, the attention output, the residual adds) and
// the errors compound through the residual stream, so the logits move by a
// few u of their scale. The tolerance: 16 u = 2^-5 of the largest fp32
// logit magnitude of the compared rows. Measured on these tiny models (2
// layers, init_std 0.2, logits up to about 5): at most 9 u of it (0.09 on a
// scale of 5.2). One extra mask bit moves a row by several times the
// tolerance (checked, so the comparison can fail).
constexpr double kBf16RelTol = 16.0 / 512.0;

std::unique_ptr<TorchTransformer> tiny_model_dtype(const LlamaConfig& c, uint64_t seed, const std::string& dtype,
                                                   const std::string& attention = "auto", double init_std = 0.2) {
  TransformerOptions o;
  o.attention = attention;
  o.dtype = dtype;
  return std::make_unique<TorchTransformer>(c, llama_random_weights(c, seed, init_std), o);
}

float max_abs(const Logits& l) {
  float m = 0.0f;
  for (float v : l.data) m = std::max(m, std::fabs(v));
  return m;
}
}  // namespace

TEST_CASE("bf16 tree forward: every node's logits within the tolerance of its fp32 path run alone", "[model][bf16]") {
  const uint32_t seed = GENERATE(1u, 2u);
  const int32_t kv_heads = GENERATE(4, 1);
  const std::string attention = GENERATE(std::string("dense"), std::string("gather"), std::string("auto"));
  CAPTURE(seed, kv_heads, attention);
  const LlamaConfig c = tiny_config(4, kv_heads);
  auto bf16 = tiny_model_dtype(c, seed, "bfloat16", attention);
  auto fp32 = tiny_model_dtype(c, seed, "float32");
  std::mt19937 rng(seed);
  const int32_t nodes = 40, split = 20;
  TokenTree t = random_tree(rng, nodes, c.vocab_size);
  std::vector<int32_t> first(split), second(nodes - split);
  std::iota(first.begin(), first.end(), 0);
  std::iota(second.begin(), second.end(), split);
  bf16->reset();
  const Logits a = forward_nodes(*bf16, t, first, 0);
  const Logits b = forward_nodes(*bf16, t, second, split);  // reads the bf16 cache the first wrote
  float worst = 0.0f, scale = 0.0f;
  for (int32_t id = 0; id < nodes; ++id) {
    const auto path = t.path_tokens(id);
    const Logits alone = run_causal(*fp32, path);
    const float* row = id < split ? a.row(id) : b.row(id - split);
    const float* want = alone.row(static_cast<int32_t>(path.size()) - 1);
    worst = std::max(worst, max_abs_diff(row, want, c.vocab_size));
    scale = std::max(scale, max_abs(alone));
  }
  const double tol = kBf16RelTol * scale;
  CAPTURE(worst, scale, tol);
  CHECK(worst <= tol);
  CHECK(worst > 0.0f);  // bf16 really ran: some logit differs from fp32

  // The tolerance can fail: one extra (non-ancestor) mask bit on the last
  // node moves its bf16 logits well past it.
  StepInput in = all_nodes_input(t, nodes);
  const int32_t q = nodes - 1;
  int32_t extra = -1;
  for (int32_t s = 0; s < nodes && extra < 0; ++s)
    if (!in.mask.test(q, s)) extra = s;
  REQUIRE(extra >= 0);
  in.mask.set(q, extra);
  bf16->reset();
  Logits wrong;
  bf16->forward(in, wrong);
  const auto path = t.path_tokens(q);
  const Logits alone = run_causal(*fp32, path);
  CHECK(max_abs_diff(wrong.row(q), alone.row(static_cast<int32_t>(path.size()) - 1), c.vocab_size) > 3 * tol);
}

TEST_CASE("bf16 hybrid attention: a star tree with the shared-prefix hint within the tolerance of fp32", "[model][bf16]") {
  const int32_t k = GENERATE(2, 5);
  CAPTURE(k);
  const LlamaConfig c = tiny_config(4, 2);
  auto bf16 = tiny_model_dtype(c, 3, "bfloat16");
  auto fp32 = tiny_model_dtype(c, 3, "float32");
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> tok(0, c.vocab_size - 1);
  std::vector<int32_t> prompt(7);
  for (auto& x : prompt) x = tok(rng);
  TokenTree t;
  const auto pnodes = t.add_chain(kNoNode, prompt);
  std::vector<std::vector<int32_t>> chains(static_cast<size_t>(k));
  std::vector<int32_t> rest;
  for (auto& ch : chains) {
    std::vector<int32_t> toks(5);
    for (auto& x : toks) x = tok(rng);
    ch = t.add_chain(pnodes.back(), toks);
    rest.insert(rest.end(), ch.begin(), ch.end());
  }
  bf16->reset();
  forward_nodes(*bf16, t, pnodes, 0);
  for (size_t i = 0; i < rest.size(); ++i) t.node(rest[i]).slot = static_cast<int32_t>(pnodes.size() + i);
  StepInput in = tree_step_input(t, rest, static_cast<int32_t>(pnodes.size() + rest.size()));
  in.shared_prefix_slots = static_cast<int32_t>(pnodes.size());
  Logits star;
  bf16->forward(in, star);
  CHECK(bf16->last_attention() == "hybrid");
  float worst = 0.0f, scale = 0.0f;
  for (size_t i = 0; i < chains.size(); ++i) {
    std::vector<int32_t> seq = prompt;
    for (int32_t id : chains[i]) seq.push_back(t.node(id).token);
    const Logits alone = run_causal(*fp32, seq);
    scale = std::max(scale, max_abs(alone));
    for (size_t j = 0; j < chains[i].size(); ++j)
      worst = std::max(worst, max_abs_diff(star.row(static_cast<int32_t>(i * chains[i].size() + j)),
                                           alone.row(static_cast<int32_t>(prompt.size() + j)), c.vocab_size));
  }
  CAPTURE(worst, scale);
  CHECK(worst > 0.0f);
  CHECK(worst <= kBf16RelTol * scale);
}

namespace {
struct Chosen {
  int32_t from_beam, token;
  double score;
};
// Each expand step's chosen beams, by step number.
std::map<int64_t, std::vector<Chosen>> chosen_by_step(const MemoryTraceSink& sink) {
  std::map<int64_t, std::vector<Chosen>> out;
  for (const json& r : sink.records) {
    if (r.value("kind", "") != "step" || !r.contains("chosen")) continue;
    auto& v = out[r["step"].get<int64_t>()];
    for (const json& c : r["chosen"]) v.push_back({c["from_beam"].get<int32_t>(), c["token"].get<int32_t>(), c["score"].get<double>()});
  }
  return out;
}

// Decodes with `run` (the bf16 model) while feeding `ref` (the fp32 model)
// every same input, and records per forward the largest difference of any
// log-probability (double log-softmax of each row, as core/select scores).
class LogprobGapTee final : public Model {
 public:
  LogprobGapTee(Model& run, Model& ref) : run_(run), ref_(ref) {}
  int32_t vocab_size() const override { return run_.vocab_size(); }
  void forward(const StepInput& in, Logits& out) override {
    Logits want;
    run_.forward(in, out);
    ref_.forward(in, want);
    double gap = 0.0;
    for (int32_t r = 0; r < out.rows; ++r) {
      const std::vector<double> a = log_softmax(out.row(r)), b = log_softmax(want.row(r));
      for (size_t v = 0; v < a.size(); ++v) gap = std::max(gap, std::fabs(a[v] - b[v]));
    }
    gaps.push_back(gap);
  }
  void compact(const CompactionPlan& plan) override {
    run_.compact(plan);
    ref_.compact(plan);
  }
  void reset() override {
    run_.reset();
    ref_.reset();
  }
  nlohmann::json describe() const override { return run_.describe(); }
  KvShape kv_shape() const override { return run_.kv_shape(); }
  std::vector<double> gaps;  // [forwards] max |bf16 - fp32| log-probability of the forward's rows

 private:
  std::vector<double> log_softmax(const float* row) const {
    const int32_t n = vocab_size();
    const double mx = *std::max_element(row, row + n);
    double sum = 0.0;
    for (int32_t v = 0; v < n; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
    std::vector<double> out(static_cast<size_t>(n));
    for (int32_t v = 0; v < n; ++v) out[static_cast<size_t>(v)] = static_cast<double>(row[v]) - mx - std::log(sum);
    return out;
  }
  Model& run_;
  Model& ref_;
};
}  // namespace

// The selection keeps the best b candidates by score, a sum of
// log-probabilities. The bf16 decode runs through LogprobGapTee, so each of
// its forwards' log-probabilities is known to lie within gap_k of fp32's on
// the same input. While the two decodes chose the same beams, every forward
// so far had the same input in both, so at step t each score differs by at
// most beta_t = the sum of gap_k over the forwards before step t's choice.
// At the first step they choose differently, some candidate x ranks above y
// in bf16 (or y was not kept) while y ranks above x in fp32 (or x was not
// kept): fp32(x) <= fp32(y) and bf16(y) <= bf16(x), so bf16(x) lies within
// beta_t of fp32(y). So where fp32's margins exceed 2 beta_t, bf16 chooses
// the same tokens in the same order. After a divergence the beams differ
// and nothing more is compared.
TEST_CASE("bf16 trie beam search: choices differ from fp32 only within the logits' measured gap", "[model][bf16]") {
  const uint32_t seed = GENERATE(10u, 11u, 12u);
  const int32_t beams = GENERATE(2, 4);
  CAPTURE(seed, beams);
  const LlamaConfig c = tiny_config(4, 2, 64);
  auto fp32 = tiny_model_dtype(c, seed, "float32", "auto", 0.3);
  auto bf16 = tiny_model_dtype(c, seed, "bfloat16", "auto", 0.3);
  auto fp32_tee = tiny_model_dtype(c, seed, "float32", "auto", 0.3);
  LogprobGapTee tee(*bf16, *fp32_tee);
  BeamConfig cfg;
  cfg.num_beams = beams;
  cfg.max_new_tokens = 10;
  cfg.gc_interval = 3;
  const std::vector<int32_t> prompt = {5, 17, 42, 8, 30};
  MemoryTraceSink s32, s16;
  trie_beam_search(*fp32, prompt, cfg, &s32);
  trie_beam_search(tee, prompt, cfg, &s16);
  REQUIRE(s16.records.front()["model"]["dtype"] == "bfloat16");  // describe() in the trace header
  REQUIRE(s32.records.front()["model"]["dtype"] == "float32");
  const auto a = chosen_by_step(s32), b = chosen_by_step(s16);
  REQUIRE(a.size() == b.size());
  REQUIRE(tee.gaps.size() >= a.size());
  for (double g : tee.gaps) CHECK(g > 0.0);  // bf16 really ran
  double beta = 1e-9;  // the scores' own double rounding
  for (const auto& [step, ca] : a) {
    const auto& cb = b.at(step);
    CAPTURE(step);
    REQUIRE(ca.size() == cb.size());
    beta += tee.gaps[static_cast<size_t>(step - 1)];  // the forward whose rows this step's choice read
    CAPTURE(beta);
    auto same = [](const Chosen& x, const Chosen& y) { return x.from_beam == y.from_beam && x.token == y.token; };
    auto rank = [&](const std::vector<Chosen>& set, const Chosen& x) {  // the size of the set: not kept
      return std::find_if(set.begin(), set.end(), [&](const Chosen& y) { return same(x, y); }) - set.begin();
    };
    bool diverged = false;
    for (const Chosen& x : cb)
      for (const Chosen& y : ca) {
        if (same(x, y)) CHECK(std::fabs(x.score - y.score) <= beta);
        if (!same(x, y) && rank(cb, x) < rank(cb, y) && rank(ca, y) < rank(ca, x)) {
          diverged = true;
          CHECK(std::fabs(x.score - y.score) <= beta);
        }
      }
    if (diverged) break;
  }
}

TEST_CASE("bf16: describe() and kv_shape() say the dtype; a bad dtype is refused by name", "[model][bf16]") {
  const LlamaConfig c = tiny_config(4, 2);
  CHECK(tiny_model_dtype(c, 1, "bfloat16")->describe()["dtype"] == "bfloat16");
  CHECK(tiny_model_dtype(c, 1, "bfloat16")->kv_shape().dtype_bytes == 2);
  CHECK(tiny_model_dtype(c, 1, "float32")->describe()["dtype"] == "float32");
  CHECK(tiny_model_dtype(c, 1, "float32")->kv_shape().dtype_bytes == 4);
  REQUIRE_THROWS_WITH(tiny_model_dtype(c, 1, "float16"), Catch::Contains("dtype must be \"float32\" or \"bfloat16\", got \"float16\""));
  REQUIRE_THROWS_WITH(tiny_model_dtype(c, 1, "bfloat16", "tree_kernel"), Catch::Contains("cannot run attention \"tree_kernel\""));

  torch_models_register();
  auto parse = [](const std::string& extra) {
    const json j = json::parse(R"({"type": "transformer", "random_init": {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2}, "seed": 3)" + extra + "}");
    return model_from_json(JsonObjectReader(j, "x.json", "model"));
  };
  REQUIRE_THROWS_WITH(parse(R"(, "dtype": "fp16")"), Catch::Contains("x.json: model.dtype must be \"float32\" or \"bfloat16\", got \"fp16\""));
  REQUIRE_THROWS_WITH(parse(R"(, "dtype": 16)"), Catch::Contains("model.dtype"));
  REQUIRE_THROWS_WITH(parse(R"(, "dtype": "bfloat16", "attention": "tree_kernel")"), Catch::Contains("x.json: model.dtype \"bfloat16\" cannot run"));
  CHECK(parse(R"(, "dtype": "bfloat16")")->describe()["dtype"] == "bfloat16");
  CHECK(parse("")->describe()["dtype"] == "float32");
}
