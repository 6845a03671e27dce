// DSBD on the LibTorch transformer pair (issue 6, docs/dsbd.md): the draft is
// the target with perturbed weights (perturb_std) or with fewer layers
// (keep_layers), built through model_from_json like a sample's draft_model.
// The two models share one token tree and one slot numbering (TreeFeeder).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/decode/dsbd.h"
#include "core/decode/run_sample.h"
#include "core/model/model_factory.h"
#include "core/select/log_normaliser.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_replay.h"
#include "tests/common/model_contract.h"
#include "tests/common/fresh_test_dir.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;
namespace fs = std::filesystem;

namespace {
// A tiny target (CI-fast): vocabulary 48, hidden 32, 2 layers; init_std 0.2 so
// the next-token distributions are far from uniform.
json target_obj(int32_t layers = 2) {
  return {{"type", "transformer"},
          {"random_init",
           {{"vocab_size", 48}, {"hidden_size", 32}, {"intermediate_size", 72}, {"num_hidden_layers", layers},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2}}},
          {"seed", 11},
          {"init_std", 0.2}};
}
json with(json j, const json& extra) {
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}
std::unique_ptr<Model> build(const json& j) {
  torch_models_register();
  return model_from_json(JsonObjectReader(j, "pair.json", "model"));
}
const std::vector<int32_t> kPrompt = {5, 9, 2, 7, 30, 11};
const std::vector<int32_t> kSeq = {1, 7, 3, 40, 12, 5, 5, 19, 33, 2};

DsbdConfig dsbd_cfg(int32_t ws, int32_t gamma, uint64_t seed, int32_t max_new) {
  DsbdConfig c;
  c.draft_width = ws;
  c.gamma = gamma;
  c.dynamic = true;
  c.threshold = 0.7;
  c.min_width = 2;
  c.max_new_tokens = max_new;
  c.sampling.seed = seed;
  return c;
}
std::vector<json> strip_time(std::vector<json> recs) {
  for (auto& r : recs)
    if (r.value("kind", "") == "summary") r.erase("seconds");
  return recs;
}
}  // namespace

TEST_CASE("weight perturbation: N(0, x std(w)) per tensor, seeded, x = 0 is the identity", "[model]") {
  const LlamaConfig c = tiny_config(4, 2, 48, false, 2, 32);
  const TensorMap w = llama_random_weights(c, 3, 0.2);
  const double x = GENERATE(0.0, 0.05, 0.3);
  CAPTURE(x);
  TensorMap a = w, b = w, d = w;
  llama_weights_perturb(a, x, 9);
  llama_weights_perturb(b, x, 9);
  llama_weights_perturb(d, x, 10);
  for (const auto& [name, t] : w) {
    CAPTURE(name);
    const auto& pa = a.at(name).data;
    CHECK(pa == b.at(name).data);  // same seed, same noise
    double mean = 0, var = 0, nvar = 0;
    for (float v : t.data) mean += v;
    mean /= static_cast<double>(t.data.size());
    for (size_t i = 0; i < t.data.size(); ++i) {
      var += (t.data[i] - mean) * (t.data[i] - mean);
      nvar += (pa[i] - t.data[i]) * (pa[i] - t.data[i]);
    }
    const double sd = std::sqrt(var / static_cast<double>(t.data.size())), nsd = std::sqrt(nvar / static_cast<double>(t.data.size()));
    if (x == 0.0 || sd == 0.0) {
      CHECK(pa == t.data);  // x = 0 and constant tensors (unit RMSNorm weights): unchanged
      continue;
    }
    CHECK(d.at(name).data != pa);
    // The noise's standard deviation is x * std(w); >= 32 entries per tensor, so within 30%.
    CHECK(nsd / (x * sd) == Approx(1.0).margin(0.3));
    if (t.data.size() >= 2048) CHECK(nsd / (x * sd) == Approx(1.0).margin(0.05));
  }
}

TEST_CASE("transformer draft options: perturb_std 0 and keep_layers give the expected models; bad values are named", "[model]") {
  auto target = build(target_obj(3));
  const Logits ref = run_causal(*target, kSeq);
  SECTION("perturb_std 0 leaves the logits bit-identical; perturb_std > 0 moves them") {
    auto same = build(with(target_obj(3), {{"perturb_std", 0.0}, {"perturb_seed", 5}}));
    const Logits s = run_causal(*same, kSeq);
    CHECK(s.data == ref.data);
    auto moved = build(with(target_obj(3), {{"perturb_std", 0.2}, {"perturb_seed", 5}}));
    const Logits m = run_causal(*moved, kSeq);
    CHECK(max_abs_diff(m.data.data(), ref.data.data(), static_cast<int32_t>(ref.data.size())) > 1e-2f);
    CHECK(moved->describe()["source"]["perturb_std"] == 0.2);
  }
  SECTION("keep_layers L' equals a model built from the truncated checkpoint") {
    const LlamaConfig c3 = dynamic_cast<TorchTransformer&>(*target).config();
    const TensorMap full = llama_random_weights(c3, 11, 0.2);
    const fs::path dfull = fresh_test_dir("torch/dsbd_keep_full"), dcut = fresh_test_dir("torch/dsbd_keep_cut");
    llama_checkpoint_write(dfull.string(), c3, full);
    // The truncated checkpoint, built independently of llama_keep_layers: 2 layers, layer 2's tensors left out.
    LlamaConfig c2 = c3;
    c2.num_hidden_layers = 2;
    TensorMap cut;
    for (const auto& [name, t] : full)
      if (name.rfind("model.layers.2.", 0) != 0) cut.emplace(name, t);
    llama_checkpoint_write(dcut.string(), c2, cut);
    auto from_cut = build({{"type", "transformer"}, {"path", dcut.string()}});
    auto from_full = build({{"type", "transformer"}, {"path", dfull.string()}, {"keep_layers", 2}});
    auto from_init = build(with(target_obj(3), {{"keep_layers", 2}}));
    const Logits a = run_causal(*from_cut, kSeq), b = run_causal(*from_full, kSeq), i = run_causal(*from_init, kSeq);
    CHECK(b.data == a.data);
    CHECK(i.data == a.data);
    CHECK(max_abs_diff(a.data.data(), ref.data.data(), static_cast<int32_t>(ref.data.size())) > 1e-2f);  // a layer really went
    CHECK(from_full->describe()["config"]["num_hidden_layers"] == 2);
    CHECK(from_full->describe()["source"]["keep_layers"] == 2);
    CHECK(from_full->kv_shape().layers == 2);
    // keep_layers = all layers is the target itself.
    auto all = build(with(target_obj(3), {{"keep_layers", 3}}));
    CHECK(run_causal(*all, kSeq).data == ref.data);
  }
  SECTION("bad values get named errors") {
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"keep_layers", 0}})), Catch::Contains("pair.json: model.keep_layers"));
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"keep_layers", 4}})),
                      Catch::Contains("model.keep_layers = 4 must be in [1, num_hidden_layers = 3]"));
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"keep_layers", 1.5}})), Catch::Contains("model.keep_layers must be an integer"));
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"perturb_std", -0.1}})), Catch::Contains("model.perturb_std must be in [0"));
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"perturb_std", "big"}})), Catch::Contains("model.perturb_std must be a number"));
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"perturb_seed", 3}})), Catch::Contains("model.perturb_seed needs perturb_std"));
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"perturb_std", 0.1}, {"perturb_seed", -1}})), Catch::Contains("model.perturb_seed"));
    CHECK_THROWS_WITH(build(with(target_obj(3), {{"perturb_stdev", 0.1}})), Catch::Contains("perturb_stdev"));
  }
}

TEST_CASE("transformer compact takes plans over slots it never wrote (two models, one slot layout)", "[spec][model]") {
  // DSBD's draft never writes the last draft layer's slots, and nobody has written a sampled
  // beam's slot when the next GC runs: the gather must move them as empty slots.
  auto m = build(target_obj());
  // past the cache's first capacity (64): slots 2..69 allocated elsewhere, never written here
  test::check_compact_over_unwritten_slots(*m, 70, 1e-6f);
  // The moved, never-written slot stays empty: reading it is refused, writing it then reading works.
  Logits out;
  CHECK_THROWS_WITH(m->forward(test::contract_step({4}, {2}, {3}, 4, {{0, 2, 3}}), out),
                    Catch::Contains("reads slot 2 that holds no K/V"));
  CHECK_NOTHROW(m->forward(test::contract_step({4}, {2}, {2}, 3, {{0, 1, 2}}), out));
  const Logits alone = run_causal(*build(target_obj()), {1, 2, 4});
  CHECK(max_abs_diff(out.row(0), alone.row(2), out.vocab) <= 1e-4f);
}

TEST_CASE("dsbd on the transformer pair: draft == target accepts every draft and every layer", "[spec][model]") {
  // Two ways to get the target as a draft: zero perturbation, or keeping all layers.
  const json extra = GENERATE(json{{"perturb_std", 0.0}, {"perturb_seed", 4}}, json{{"keep_layers", 2}});
  const int32_t gamma = GENERATE(2, 3);
  const uint64_t seed = GENERATE(1ull, 2ull);
  CAPTURE(extra.dump(), gamma, seed);
  auto target = build(target_obj()), draft = build(with(target_obj(), extra));
  MemoryTraceSink sink;
  const DsbdResult r = dsbd_decode(*target, *draft, kPrompt, dsbd_cfg(4, gamma, seed, 20), &sink);
  const DsbdStats& st = r.stats;
  REQUIRE(st.full_iterations > 0);
  CHECK(st.draft_beams_tested > 0);
  CHECK(st.draft_beams_accepted == st.draft_beams_tested);
  // Eq. 2-7 with alpha = 1 (up to float rounding between the forest pass and the draft's passes):
  // W_L^(l) = every surviving draft, so no layer falls short.
  for (int32_t l = 0; l < gamma; ++l) CHECK(st.layer_accepted[static_cast<size_t>(l)] == st.layer_verified[static_cast<size_t>(l)]);
  CHECK(st.steps_in_full_iterations == st.full_iterations * (gamma + 1));
  CHECK(r.out.decode.hypotheses.front().tokens.size() == 20u);
  // The acceptance probabilities are min(1, p/q) with p == q up to rounding.
  int tested = 0;
  for (const auto& rec : sink.records)
    if (rec.value("phase", "") == "verify")
      for (const auto& l : rec["verify"]["layers"])
        for (const auto& d : l["drafts"]) {
          CHECK(d["accept_prob"].get<double>() > 1.0 - 1e-4);
          ++tested;
        }
  CHECK(tested > 10);
}

TEST_CASE("dsbd on the transformer pair: the forest pass gives each draft path's target logits scored alone", "[spec][model]") {
  const json extra = GENERATE(json{{"perturb_std", 0.5}, {"perturb_seed", 4}}, json{{"keep_layers", 1}});
  const uint64_t seed = GENERATE(3ull, 4ull);
  CAPTURE(extra.dump(), seed);
  auto target = build(target_obj()), draft = build(with(target_obj(), extra));
  auto alone = build(target_obj());
  MemoryTraceSink sink;
  const DsbdResult r = dsbd_decode(*target, *draft, kPrompt, dsbd_cfg(4, 3, seed, 16), &sink);
  CHECK(r.stats.draft_beams_accepted < r.stats.draft_beams_tested);  // the draft really differs
  TraceReplay replay(sink.records, "memory");
  int checked = 0, multi_tree = 0;
  float worst = 0.0f;
  for (const auto& rec : sink.records) {
    if (rec.value("kind", "") != "step" || rec.value("phase", "") != "verify") continue;
    const StepView v = replay.at(rec["step"].get<int32_t>());
    REQUIRE(v.forward.has_value());
    // Each query reads exactly its ancestors-or-self, at position id = depth.
    int32_t min_depth = 1 << 30, at_min = 0;
    for (size_t q = 0; q < v.forward->queries.size(); ++q) {
      const TreeNode& n = v.nodes[static_cast<size_t>(v.forward->queries[q])];
      int32_t bits = 0;
      for (int32_t c = 0; c < v.forward->mask.cols; ++c) bits += v.forward->mask.test(static_cast<int32_t>(q), c);
      CHECK(bits == n.depth + 1);
      CHECK(v.forward->positions[q] == n.depth);
      if (n.depth < min_depth) min_depth = n.depth, at_min = 0;
      at_min += n.depth == min_depth;
    }
    multi_tree += at_min > 1;  // more than one input beam: a forest of several trees in one pass
    for (const auto& e : rec["target_logprob"]) {
      const auto id = e[0].get<int32_t>();
      const double lp = e[1].get<double>();
      std::vector<int32_t> path;
      for (int32_t a = v.nodes[static_cast<size_t>(id)].parent; a != kNoNode; a = v.nodes[static_cast<size_t>(a)].parent)
        path.insert(path.begin(), v.nodes[static_cast<size_t>(a)].token);
      const Logits out = run_causal(*alone, path);
      std::vector<double> row(static_cast<size_t>(out.vocab));
      log_softmax_row(out.row(static_cast<int32_t>(path.size()) - 1), out.vocab, row.data());
      const double ref = row[static_cast<size_t>(v.nodes[static_cast<size_t>(id)].token)];
      CAPTURE(id, lp, ref);
      CHECK(std::fabs(lp - ref) <= 1e-4);
      worst = std::max(worst, static_cast<float>(std::fabs(lp - ref)));
      ++checked;
    }
  }
  CHECK(worst <= 1e-4f);
  CHECK(checked > 20);
  CHECK(multi_tree > 0);
}

TEST_CASE("dsbd on the transformer pair: same seed same trace, different seeds different traces", "[spec][model]") {
  const json extra = GENERATE(json{{"perturb_std", 0.3}, {"perturb_seed", 4}}, json{{"keep_layers", 1}});
  CAPTURE(extra.dump());
  auto target = build(target_obj()), draft = build(with(target_obj(), extra));
  auto run = [&](uint64_t seed) {
    MemoryTraceSink sink;
    dsbd_decode(*target, *draft, kPrompt, dsbd_cfg(4, 2, seed, 16), &sink);
    return strip_time(sink.records);
  };
  const auto a = run(21), b = run(21), d = run(22);
  const auto same = trace_diff(a, b);
  CHECK_FALSE(same.has_value());
  const auto diff = trace_diff(a, d);
  REQUIRE(diff.has_value());
  CAPTURE(diff->describe());
  // The gc records show the shared layout being compacted in both caches.
  int gcs = 0;
  for (const auto& r : a) gcs += r.value("kind", "") == "gc";
  CHECK(gcs > 0);
}

TEST_CASE("samples/dsbd_transformer.json runs end to end", "[spec][model]") {
  torch_models_register();
  Sample s = sample_load(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/dsbd_transformer.json");
  MemoryTraceSink sink;
  std::ostringstream os;
  run_sample(s, &sink, os);
  CAPTURE(os.str());
  CHECK(os.str().find("target forward passes") != std::string::npos);
  CHECK(os.str().find("KV slots (target cache) at peak") != std::string::npos);
  const json& header = sink.records.front();
  CAPTURE(header.dump().substr(0, 2000));
  CHECK(header.dump().find("perturb_std") != std::string::npos);
  CHECK(sink.records.back().value("kind", "") == "summary");
}
