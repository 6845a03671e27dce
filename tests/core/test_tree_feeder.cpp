// TreeFeeder (core/decode/sampling.h): the rows of its last pass, by node,
// and the drafting decoders' prefill over two feeders.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "core/decode/sampling.h"
#include "core/decode/tree_step.h"
#include "core/model/synthetic_model.h"
#include "core/select/log_normaliser.h"
#include "core/trace/trace_recorder.h"
#include "random_tree.h"

using namespace triescope;

namespace {
// The node's ancestors-or-self, as flags over the tree.
void mark_chain(const TokenTree& t, int32_t node, std::vector<char>& marked) {
  for (int32_t a = node; a != kNoNode; a = t.node(a).parent) marked[static_cast<size_t>(a)] = 1;
}
}  // namespace

TEST_CASE("tree feeder: a fed node's row is the log-softmax of its logits; an unfed node has none", "[tree_feeder]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u);
  const int32_t asked_count = GENERATE(1, 3);
  CAPTURE(seed, asked_count);
  SyntheticConfig cfg;
  cfg.vocab_size = 32;
  cfg.seed = seed;
  const auto rt = test::random_tree(seed, 4, 30, cfg.vocab_size);
  const int32_t n = rt.tree.size(), V = cfg.vocab_size;
  // The reference: every node in one pass of a second model.
  const std::vector<int32_t> all = rt.tree.order_insertion();
  SyntheticModel reference(cfg);
  Logits ref;
  reference.forward(tree_step_input(rt.tree, all, rt.slots.num_slots()), ref);

  SyntheticModel model(cfg);
  TreeFeeder feeder(model);
  const std::vector<int32_t> leaves = test::leaves(rt.tree);
  const std::vector<int32_t> asked(leaves.begin(), leaves.begin() + std::min<std::ptrdiff_t>(asked_count, std::ssize(leaves)));
  feeder.feed(rt.tree, rt.slots.num_slots(), asked, false);
  std::vector<char> fed(static_cast<size_t>(n), 0);  // the asked nodes and their missing ancestors
  for (int32_t id : asked) mark_chain(rt.tree, id, fed);
  CHECK(feeder.calls == 1);
  CHECK(feeder.tokens == std::count(fed.begin(), fed.end(), 1));
  for (int32_t id = 0; id < n; ++id) {
    CAPTURE(id);
    const double* row = feeder.row(id);
    REQUIRE((row != nullptr) == static_cast<bool>(fed[static_cast<size_t>(id)]));
    if (!row) continue;
    const auto at = std::find(all.begin(), all.end(), id) - all.begin();
    std::vector<double> expect(static_cast<size_t>(V));
    log_softmax_row(ref.row(static_cast<int32_t>(at)), V, expect.data());
    CHECK(std::vector<double>(row, row + V) == expect);
  }
  CHECK(feeder.row(-1) == nullptr);
  CHECK(feeder.row(n) == nullptr);
}

TEST_CASE("tree feeder: a drafting prefill feeds the same nodes to the target and the draft", "[tree_feeder]") {
  const uint32_t seed = GENERATE(5u, 6u);
  const int32_t prompt_len = GENERATE(1, 2, 6);
  CAPTURE(seed, prompt_len);
  SyntheticConfig cfg;
  cfg.vocab_size = 32;
  cfg.seed = seed;
  SyntheticConfig draft_cfg = cfg;
  draft_cfg.perturb_seed = seed + 100;
  draft_cfg.perturb_q8 = 128;
  const auto rt = test::random_tree(seed, prompt_len, 0, cfg.vocab_size);
  const std::vector<int32_t> prompt_nodes = rt.tree.order_insertion();
  const std::vector<int32_t> pre(prompt_nodes.begin(), prompt_nodes.end() - 1);
  SyntheticModel target_model(cfg), draft_model(draft_cfg);
  TreeFeeder target(target_model), draft(draft_model);
  TraceRecorder rec(nullptr, 0);
  StepRecord ev(rec);
  feed_prefill(target, draft, rt.tree, rt.slots.num_slots(), pre, ev);
  const int64_t passes = pre.empty() ? 0 : 1;
  CHECK(target.calls == passes);
  CHECK(draft.calls == passes);
  CHECK(target.tokens == std::ssize(pre));
  CHECK(draft.tokens == std::ssize(pre));
  for (int32_t id : prompt_nodes) {
    CAPTURE(id);
    const bool in_pre = std::find(pre.begin(), pre.end(), id) != pre.end();
    CHECK(target.written(id) == in_pre);
    CHECK(draft.written(id) == in_pre);
    CHECK((target.row(id) != nullptr) == in_pre);
    CHECK((draft.row(id) != nullptr) == in_pre);
  }
}
