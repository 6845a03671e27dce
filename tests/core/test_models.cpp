#include <catch2/catch.hpp>

#include "core/decode/tree_step.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/scripted_model.h"
#include "core/model/synthetic_model.h"
#include "random_tree.h"

using namespace triescope;

namespace {
StepInput input_for(const TokenTree& t, const std::vector<int32_t>& nodes, int32_t num_slots) {
  return tree_step_input(t, nodes, num_slots);
}
}  // namespace

TEST_CASE("synthetic model: a single wrong mask bit changes the logits", "[model]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u, 5u, 6u);
  const double rep = GENERATE(0.0, 0.5, 1.0);
  CAPTURE(seed, rep);
  SyntheticConfig cfg;
  cfg.vocab_size = 32;
  cfg.seed = seed;
  cfg.repetitiveness_q8 = static_cast<int32_t>(rep * 256);
  auto rt = test::random_tree(seed, 4, 40, cfg.vocab_size);
  const auto all = rt.tree.order_insertion();
  SyntheticModel m(cfg);
  Logits base;
  m.forward(input_for(rt.tree, all, rt.slots.num_slots()), base);
  // Flip every single bit of one query row in turn: each flip must move its logits.
  const int32_t q = rt.tree.size() - 1;
  for (int32_t s = 0; s < rt.slots.num_slots(); ++s) {
    CAPTURE(s);
    StepInput in = input_for(rt.tree, {q}, rt.slots.num_slots());
    if (in.mask.test(0, s) && s == rt.tree.node(q).slot) continue;  // its own slot: the query always reads itself
    in.mask.flip(0, s);
    Logits got;
    m.forward(in, got);
    REQUIRE(std::vector<float>(got.row(0), got.row(0) + cfg.vocab_size) !=
            std::vector<float>(base.row(q), base.row(q) + cfg.vocab_size));
  }
}

TEST_CASE("synthetic model: position ids matter and logits are deterministic", "[model]") {
  SyntheticConfig cfg;
  cfg.vocab_size = 64;
  auto rt = test::random_tree(9, 6, 10, cfg.vocab_size);
  const auto all = rt.tree.order_insertion();
  SyntheticModel a(cfg), b(cfg);
  Logits la, lb, lc;
  a.forward(input_for(rt.tree, all, rt.slots.num_slots()), la);
  b.forward(input_for(rt.tree, all, rt.slots.num_slots()), lb);
  CHECK(la.data == lb.data);
  StepInput shifted = input_for(rt.tree, all, rt.slots.num_slots());
  shifted.positions.back() += 1;
  SyntheticModel c(cfg);
  c.forward(shifted, lc);
  CHECK(std::vector<float>(la.row(la.rows - 1), la.row(la.rows - 1) + 64) !=
        std::vector<float>(lc.row(lc.rows - 1), lc.row(lc.rows - 1) + 64));
}

TEST_CASE("synthetic model: logits are exact multiples of 1/4096 (a CUDA twin can match bit for bit)", "[model]") {
  SyntheticConfig cfg;
  cfg.vocab_size = 100;
  cfg.peakiness_q8 = 300;
  auto rt = test::random_tree(3, 3, 5, cfg.vocab_size);
  SyntheticModel m(cfg);
  Logits l;
  m.forward(input_for(rt.tree, rt.tree.order_insertion(), rt.slots.num_slots()), l);
  for (float x : l.data) REQUIRE(x * 4096.0f == std::floor(x * 4096.0f));
}

TEST_CASE("synthetic model: eos_rate controls how often EOS is the top token", "[model]") {
  SyntheticConfig cfg;
  cfg.vocab_size = 50;
  cfg.eos_token = 49;
  cfg.eos_per_million = 200000;  // 20 %
  std::vector<int32_t> fixed(50);
  int tops = 0;
  const int trials = 4000;
  for (int i = 0; i < trials; ++i) {
    int32_t tok = i % 49, pos = i;
    synthetic_logits_fixed(cfg, &tok, &pos, 1, pos, fixed.data());
    tops += std::max_element(fixed.begin(), fixed.end()) - fixed.begin() == 49;
  }
  CHECK(tops / double(trials) == Approx(0.2).margin(0.03));
}

TEST_CASE("scripted model: plays back its table only for an exact visible context", "[model]") {
  ScriptedConfig cfg;
  cfg.vocab = {"a", "b", "c", "d"};
  cfg.entries.push_back({{0, 1}, {{2, 5.0f}}});
  ScriptedModel m(cfg);
  TokenTree t;
  auto ids = t.add_chain(kNoNode, {0, 1});
  const int32_t side = t.add_child(0, 3, 0);
  int32_t s = 0;
  for (int32_t id : {ids[0], ids[1], side}) t.node(id).slot = s++;
  StepInput in = input_for(t, {ids[0], ids[1], side}, 3);
  Logits l;
  m.forward(in, l);
  CHECK(l.row(1)[2] == 5.0f);
  CHECK(l.row(2)[2] == -20.0f);
  in.mask.set(1, 2);  // let "b" see the sibling branch: no longer the scripted context
  m.forward(in, l);
  CHECK(l.row(1)[2] == -20.0f);
}

TEST_CASE("logits_rows: the listed queries' rows, in order, from a model that computes every row", "[model][logits_rows]") {
  SyntheticConfig cfg;
  cfg.vocab_size = 48;
  cfg.seed = 11;
  auto rt = test::random_tree(11, 3, 30, cfg.vocab_size);
  const auto all = rt.tree.order_insertion();
  SyntheticModel m(cfg);
  Logits full;
  m.forward(input_for(rt.tree, all, rt.slots.num_slots()), full);
  StepInput in = input_for(rt.tree, all, rt.slots.num_slots());
  in.logits_rows = {0, 4, static_cast<int32_t>(all.size()) - 1};
  Logits got;
  m.reset();
  m.forward(in, got);
  logits_keep_rows(in, got);
  REQUIRE(got.rows == 3);
  for (int32_t r = 0; r < 3; ++r) {
    const int32_t query = in.logits_rows[static_cast<size_t>(r)];
    CAPTURE(r, query);
    CHECK(std::vector<float>(got.row(r), got.row(r) + cfg.vocab_size) == std::vector<float>(full.row(query), full.row(query) + cfg.vocab_size));
  }
  logits_keep_rows(in, got);  // already kept: unchanged
  CHECK(got.rows == 3);
  CHECK(std::vector<float>(got.row(2), got.row(2) + cfg.vocab_size) ==
        std::vector<float>(full.row(static_cast<int32_t>(all.size()) - 1), full.row(static_cast<int32_t>(all.size()) - 1) + cfg.vocab_size));
}

TEST_CASE("logits_rows: a list that does not rise within the queries, or a row count that fits neither, is a named error", "[model][logits_rows]") {
  SyntheticConfig cfg;
  cfg.vocab_size = 16;
  auto rt = test::random_tree(3, 2, 10, cfg.vocab_size);
  const auto all = rt.tree.order_insertion();
  const int32_t q = static_cast<int32_t>(all.size());
  SyntheticModel m(cfg);
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{2, 1}, std::vector<int32_t>{3, 3}, std::vector<int32_t>{-1}, std::vector<int32_t>{q}}) {
    StepInput in = input_for(rt.tree, all, rt.slots.num_slots());
    in.logits_rows = bad;
    Logits out;
    m.reset();
    CHECK_THROWS_WITH(m.forward(in, out), Catch::Contains("logits_rows["));
  }
  StepInput in = input_for(rt.tree, all, rt.slots.num_slots());
  in.logits_rows = {0, 1};
  Logits odd;
  odd.resize(3, cfg.vocab_size);
  CHECK_THROWS_WITH(logits_keep_rows(in, odd), Catch::Contains("3 logits rows for") && Catch::Contains("2 listed"));
}
