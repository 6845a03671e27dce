// MultiGen on real attention: Method 3's hybrid path (dense prompt part +
// per-sample gather) computes the same function as Method 2's mask.
#include <catch2/catch.hpp>

#include <random>

#include "core/decode/tree_step.h"
#include "core/decode/multigen.h"
#include "core/mask/ancestor_mask.h"
#include "torch_test_util.h"

using namespace triescope;
using namespace triescope::test;

TEST_CASE("multigen on the transformer: copy, structured and hybrid give identical samples", "[model][multigen]") {
  const uint32_t seed = GENERATE(1u, 2u);
  const int warp = GENERATE(0, 1, 2);
  CAPTURE(seed, warp);
  const LlamaConfig c = tiny_config(4, 2, 64);
  auto model = tiny_model(c, seed);
  MultiGenConfig mg;
  mg.num_samples = 4;
  mg.max_new_tokens = 8;
  mg.sampling.seed = seed + 100;
  if (warp == 1) mg.sampling.top_k = 8;
  if (warp == 2) mg.sampling.top_p = 0.9;
  const std::vector<int32_t> prompt = {3, 14, 15, 9, 26, 5};
  mg.method = MultiGenMethod::copy;
  const auto copy = multigen_decode(*model, prompt, mg);
  mg.method = MultiGenMethod::structured;
  const auto structured = multigen_decode(*model, prompt, mg);
  mg.method = MultiGenMethod::hybrid;
  const auto hybrid = multigen_decode(*model, prompt, mg);
  CHECK(model->last_attention() == "hybrid");
  REQUIRE(copy.samples == structured.samples);
  REQUIRE(hybrid.samples == structured.samples);
  CHECK(hybrid.metrics.peak_slots < copy.metrics.peak_slots);
}

TEST_CASE("hybrid attention equals the masked path on a star step, and rejects a false prefix claim", "[model][multigen]") {
  const LlamaConfig c = tiny_config(4, 1, 64);
  auto a = tiny_model(c, 9), b = tiny_model(c, 9, "dense");
  TokenTree t;
  const std::vector<int32_t> prompt = t.add_chain(kNoNode, {1, 2, 3, 4, 5});
  std::vector<int32_t> tips;
  for (int32_t i = 0; i < 3; ++i) tips.push_back(t.add_child(prompt.back(), 10 + i, 0.0));
  std::vector<int32_t> second;
  for (int32_t i = 0; i < 3; ++i) second.push_back(t.add_child(tips[static_cast<size_t>(i)], 20 + i, 0.0));
  int32_t s = 0;
  for (const auto& group : std::vector<std::vector<int32_t>>{prompt, tips, second})
    for (int32_t id : group) t.node(id).slot = s++;
  auto step = [&](const std::vector<int32_t>& nodes, int32_t shared) {
    StepInput in = tree_step_input(t, nodes, t.node(nodes.back()).slot + 1);
    in.shared_prefix_slots = shared;
    return in;
  };
  Logits la, lb;
  for (Model* m : {static_cast<Model*>(a.get()), static_cast<Model*>(b.get())}) {
    m->reset();
    m->forward(step(prompt, 0), la);
    m->forward(step(tips, 5), la);
  }
  a->forward(step(second, 5), la);
  b->forward(step(second, 0), lb);
  CHECK(a->last_attention() == "hybrid");
  for (int32_t r = 0; r < 3; ++r) CHECK(max_abs_diff(la.row(r), lb.row(r), c.vocab_size) <= 1e-5f);
  StepInput bad = step(second, 6);  // slot 5 is sample 0's token: not every row reads it
  CHECK_THROWS_WITH(a->forward(bad, la), Catch::Contains("shared_prefix_slots"));
}
