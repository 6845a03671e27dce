// Mask and position correctness on real attention: a tree laid into one flat
// cache must give every node exactly the logits of its path run alone.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>
#include <sstream>

#include "core/decode/batch_beam_search.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/model_factory.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;

namespace {
float diff_vs_path(Model& m, const TokenTree& t, int32_t node, const float* row) {
  const auto path = t.path_tokens(node);
  const Logits alone = run_causal(m, path);
  return max_abs_diff(row, alone.row(static_cast<int32_t>(path.size()) - 1), m.vocab_size());
}
}  // namespace

TEST_CASE("tree forward equals each path run alone, causally", "[model]") {
  const uint32_t seed = GENERATE(1u, 2u);
  const int32_t nodes = GENERATE(9, 40);
  const int32_t kv_heads = GENERATE(4, 2, 1);  // GQA ratios 1, 2, 4
  const std::string attention = GENERATE(std::string("dense"), std::string("gather"), std::string("auto"), std::string("tree_kernel"));
  CAPTURE(seed, nodes, kv_heads, attention);
  const LlamaConfig c = tiny_config(4, kv_heads);
  auto model = tiny_model(c, seed, attention);
  auto ref = tiny_model(c, seed, "auto");
  std::mt19937 rng(seed);
  TokenTree t = random_tree(rng, nodes, c.vocab_size);

  // Two forwards: the second reads the cache the first wrote.
  const int32_t split = nodes / 2;
  std::vector<int32_t> first(static_cast<size_t>(split)), second(static_cast<size_t>(nodes - split));
  std::iota(first.begin(), first.end(), 0);
  std::iota(second.begin(), second.end(), split);
  model->reset();
  const Logits a = forward_nodes(*model, t, first, 0);
  const Logits b = forward_nodes(*model, t, second, split);
  if (attention != "auto") CHECK(model->last_attention() == attention);
  float worst = 0.0f;
  for (int32_t id = 0; id < nodes; ++id) {
    const float* row = id < split ? a.row(id) : b.row(id - split);
    worst = std::max(worst, diff_vs_path(*ref, t, id, row));
  }
  CAPTURE(worst);
  CHECK(worst <= 1e-4f);

  // The tolerance can fail: one extra (non-ancestor) mask bit moves the logits.
  model->reset();
  StepInput in = all_nodes_input(t, nodes);
  const int32_t q = nodes - 1;  // the last node; some earlier node is not its ancestor unless the tree is a chain
  int32_t extra = -1;
  for (int32_t s = 0; s < nodes && extra < 0; ++s)
    if (!in.mask.test(q, s)) extra = s;
  if (extra >= 0) {
    in.mask.set(q, extra);
    Logits wrong;
    model->forward(in, wrong);
    CHECK(diff_vs_path(*ref, t, q, wrong.row(q)) > 1e-3f);
  }
}

TEST_CASE("logits_rows: the LM head runs on the listed queries only, their rows those of the full forward", "[model][logits_rows]") {
  const std::string attention = GENERATE(std::string("dense"), std::string("gather"), std::string("auto"), std::string("tree_kernel"));
  CAPTURE(attention);
  const LlamaConfig c = tiny_config(4, 2);
  auto model = tiny_model(c, 5, attention);
  std::mt19937 rng(5);
  TokenTree t = random_tree(rng, 30, c.vocab_size);
  std::vector<int32_t> all(30);
  std::iota(all.begin(), all.end(), 0);
  model->reset();
  const Logits full = forward_nodes(*model, t, all, 0);
  StepInput in = all_nodes_input(t, 30);
  in.logits_rows = {3, 17, 29};
  model->reset();
  Logits got;
  model->forward(in, got);
  REQUIRE(got.rows == 3);  // computed for the listed queries only, not kept afterwards
  float worst = 0.0f;
  for (int32_t r = 0; r < 3; ++r) worst = std::max(worst, max_abs_diff(got.row(r), full.row(in.logits_rows[static_cast<size_t>(r)]), c.vocab_size));
  // The head's matrix product over 3 rows instead of 30 may round
  // differently (BLAS picks its kernels by shape); a wrong row is off by O(1).
  INFO("worst " << std::to_string(worst));
  CHECK(worst <= 1e-5f);
}

TEST_CASE("star tree (prompt + k chains) equals k independent runs", "[model]") {
  const int32_t k = GENERATE(2, 5);
  const uint32_t seed = GENERATE(3u, 4u);
  CAPTURE(k, seed);
  const LlamaConfig c = tiny_config(4, 2);
  auto model = tiny_model(c, seed);
  auto ref = tiny_model(c, seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, c.vocab_size - 1);
  std::vector<int32_t> prompt(7);
  for (auto& x : prompt) x = tok(rng);
  TokenTree t;
  const auto pnodes = t.add_chain(kNoNode, prompt);
  std::vector<std::vector<int32_t>> chains(static_cast<size_t>(k));
  for (auto& ch : chains) {
    std::vector<int32_t> toks(5);
    for (auto& x : toks) x = tok(rng);
    ch = t.add_chain(pnodes.back(), toks);
  }
  model->reset();
  forward_nodes(*model, t, pnodes, 0);
  std::vector<int32_t> rest;  // all chains in one forward: the MultiGen step
  for (const auto& ch : chains) rest.insert(rest.end(), ch.begin(), ch.end());
  const Logits star = forward_nodes(*model, t, rest, static_cast<int32_t>(pnodes.size()));
  for (size_t i = 0; i < chains.size(); ++i) {
    std::vector<int32_t> seq = prompt;
    for (int32_t id : chains[i]) seq.push_back(t.node(id).token);
    const Logits alone = run_causal(*ref, seq);
    for (size_t j = 0; j < chains[i].size(); ++j) {
      const auto r = static_cast<int32_t>(i * chains[i].size() + j);
      CAPTURE(i, j);
      CHECK(max_abs_diff(star.row(r), alone.row(static_cast<int32_t>(prompt.size() + j)), c.vocab_size) <= 1e-4f);
    }
  }
}

TEST_CASE("shuffled serialisation leaves every node's logits unchanged", "[model]") {
  const uint32_t seed = GENERATE(5u, 6u, 7u);
  CAPTURE(seed);
  const LlamaConfig c = tiny_config(4, 1);
  auto model = tiny_model(c, seed);
  std::mt19937 rng(seed);
  TokenTree t = random_tree(rng, 30, c.vocab_size);
  std::vector<int32_t> order(30);
  std::iota(order.begin(), order.end(), 0);
  model->reset();
  const Logits base = forward_nodes(*model, t, order, 0);
  std::vector<int32_t> shuffled = order;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  model->reset();
  const Logits sh = forward_nodes(*model, t, shuffled, 0);
  for (size_t k = 0; k < shuffled.size(); ++k) {
    CAPTURE(k, shuffled[k]);
    CHECK(max_abs_diff(sh.row(static_cast<int32_t>(k)), base.row(shuffled[k]), c.vocab_size) <= 1e-4f);
  }
  // Position ids are what RoPE reads: the flat index instead of the depth
  // gives different logits for some node.
  model->reset();
  const Logits flat = forward_nodes(*model, t, shuffled, 0, /*use_flat_positions=*/true);
  float worst = 0.0f;
  for (size_t k = 0; k < shuffled.size(); ++k)
    worst = std::max(worst, max_abs_diff(flat.row(static_cast<int32_t>(k)), base.row(shuffled[k]), c.vocab_size));
  CHECK(worst > 1e-3f);
}

TEST_CASE("GC compaction mid-decode leaves later logits unchanged", "[model]") {
  const uint32_t seed = GENERATE(8u, 9u);
  CAPTURE(seed);
  const LlamaConfig c = tiny_config(4, 2);
  auto model = tiny_model(c, seed);
  auto ref = tiny_model(c, seed);
  std::mt19937 rng(seed);
  TokenTree t = random_tree(rng, 40, c.vocab_size);
  std::vector<int32_t> order(40);
  std::iota(order.begin(), order.end(), 0);
  model->reset();
  forward_nodes(*model, t, order, 0);
  // Keep 3 random nodes alive; collect the rest, then feed one child of each.
  std::vector<int32_t> live = {39, static_cast<int32_t>(rng() % 39), static_cast<int32_t>(rng() % 20)};
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  const CompactionPlan plan = kv_collect_garbage(t, live, 40);
  CHECK(plan.new_num_slots() < 40);
  model->compact(plan);
  std::vector<int32_t> kids;
  for (int32_t p : live) kids.push_back(t.add_child(p, static_cast<int32_t>(rng() % static_cast<uint32_t>(c.vocab_size)), 0.0));
  const Logits after = forward_nodes(*model, t, kids, plan.new_num_slots());
  for (size_t i = 0; i < kids.size(); ++i) {
    CAPTURE(i);
    CHECK(diff_vs_path(*ref, t, kids[i], after.row(static_cast<int32_t>(i))) <= 1e-4f);
  }
}

TEST_CASE("trie beam search equals batch beam search on the transformer", "[model]") {
  const int32_t beams = GENERATE(2, 3, 5);
  const int32_t gc = GENERATE(0, 3);
  const uint32_t seed = GENERATE(10u, 11u);
  CAPTURE(beams, gc, seed);
  const LlamaConfig c = tiny_config(4, 2, 64);
  auto model = tiny_model(c, seed, "auto", 0.3);
  BeamConfig cfg;
  cfg.num_beams = beams;
  cfg.max_new_tokens = 7;
  cfg.eos_token = 3;
  cfg.gc_interval = gc;
  const std::vector<int32_t> prompt = {5, 17, 42, 8, 30};
  const DecodeResult trie = trie_beam_search(*model, prompt, cfg);
  const DecodeResult batch = batch_beam_search(*model, prompt, cfg);
  check_hypotheses_close(trie, batch, 1e-4);
  CHECK(trie.metrics.peak_slots < batch.metrics.peak_slots);
  CHECK(model->last_attention() == "blocks");  // the batch layout's block-diagonal rows
}

TEST_CASE("transformer_tiny sample runs trie and batch to the same outputs", "[model]") {
  torch_models_register();
  Sample s = sample_load(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/transformer_tiny.json");
  std::ostringstream report;
  MemoryTraceSink sink;
  const SampleRun r = run_sample(s, &sink, report);
  CAPTURE(report.str());
  CHECK(report.str().find("outputs identical to batch beam search: yes") != std::string::npos);
  REQUIRE(r.baseline);
  CHECK(r.metrics["peak_slots"].get<int64_t>() < r.baseline->metrics.peak_slots);
}

TEST_CASE("transformer model object: bad fields get named errors", "[model]") {
  torch_models_register();
  auto parse = [](const std::string& text) {
    const json j = json::parse(text);
    return model_from_json(JsonObjectReader(j, "x.json", "model"));
  };
  REQUIRE_THROWS_WITH(parse(R"({"type": "transformer"})"), Catch::Contains("give exactly one of path"));
  REQUIRE_THROWS_WITH(parse(R"({"type": "transformer", "path": "/nonexistent/dir"})"), Catch::Contains("is neither a directory nor a .gguf file"));
  REQUIRE_THROWS_WITH(parse(R"({"type": "transformer", "random_init": {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2}, "device": "tpu"})"),
                      Catch::Contains("model.device"));
  REQUIRE_THROWS_WITH(parse(R"({"type": "transformer", "random_init": {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "hiden_size": 3}})"),
                      Catch::Contains("hiden_size is not a known config key"));
  REQUIRE_THROWS_WITH(parse(R"({"type": "transformer", "random_init": {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2}, "device": "cuda"})"),
                      Catch::Contains("cuda"));
  auto m = parse(R"({"type": "transformer", "random_init": {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2}, "seed": 3})");
  CHECK(m->vocab_size() == 64);
  CHECK(m->describe()["type"] == "transformer");
}

TEST_CASE("transformer rejects reads of empty slots and repeated writes", "[model]") {
  const LlamaConfig c = tiny_config(4, 2);
  auto m = tiny_model(c, 1);
  m->reset();
  StepInput in;
  in.tokens = {1, 2};
  in.positions = {0, 1};
  in.slots = {0, 1};
  in.num_slots = 3;
  in.mask.reset(2, 3);
  in.mask.set(0, 0);
  in.mask.set(1, 0);
  in.mask.set(1, 2);  // slot 2 was never written
  Logits out;
  REQUIRE_THROWS_WITH(m->forward(in, out), Catch::Contains("reads slot 2 that holds no K/V"));
  in.mask.flip(1, 2);
  in.slots = {1, 1};
  in.mask.set(1, 1);
  REQUIRE_THROWS_WITH(m->forward(in, out), Catch::Contains("written twice"));
}
