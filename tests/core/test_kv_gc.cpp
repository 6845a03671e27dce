#include <catch2/catch.hpp>

#include <set>

#include "core/decode/tree_step.h"
#include "core/kv/kv_cache.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/synthetic_model.h"
#include "random_tree.h"

using namespace triescope;

namespace {
// Feeds `nodes` of the tree through the model (parents first).
Logits feed(Model& m, const TokenTree& t, const std::vector<int32_t>& nodes, int32_t num_slots) {
  const StepInput in = tree_step_input(t, nodes, num_slots);
  Logits out;
  m.forward(in, out);
  return out;
}
}  // namespace

TEST_CASE("kv gc: keeps exactly the ancestors of live nodes, in their old order", "[kv]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u);
  CAPTURE(seed);
  auto rt = test::random_tree(seed, 6, 120, 40);
  auto lv = test::leaves(rt.tree);
  std::mt19937 rng(seed);
  std::shuffle(lv.begin(), lv.end(), rng);
  lv.resize(std::min<size_t>(lv.size(), 5));
  std::set<int32_t> expect_nodes;
  for (int32_t l : lv)
    for (int32_t n : rt.tree.path_nodes(l)) expect_nodes.insert(n);
  std::vector<int32_t> old_slot(static_cast<size_t>(rt.tree.size()));
  for (auto& n : rt.tree.nodes()) old_slot[static_cast<size_t>(n.id)] = n.slot;

  const CompactionPlan plan = kv_collect_garbage(rt.tree, lv, rt.slots.num_slots());
  REQUIRE(plan.new_num_slots() == static_cast<int32_t>(expect_nodes.size()));
  CHECK(std::is_sorted(plan.src.begin(), plan.src.end()));
  for (auto& n : rt.tree.nodes()) {
    CAPTURE(n.id);
    if (expect_nodes.count(n.id)) {
      REQUIRE(n.slot >= 0);
      CHECK(plan.src[static_cast<size_t>(n.slot)] == old_slot[static_cast<size_t>(n.id)]);
    } else {
      CHECK(n.slot == kNoSlot);
    }
  }
}

TEST_CASE("kv gc: the model's logits for new nodes are unchanged across a GC", "[kv]") {
  const uint32_t seed = GENERATE(5u, 6u, 7u);
  CAPTURE(seed);
  SyntheticConfig cfg;
  cfg.vocab_size = 40;
  cfg.seed = seed;
  auto rt = test::random_tree(seed, 5, 80, cfg.vocab_size);
  auto lv = test::leaves(rt.tree);
  lv.resize(std::min<size_t>(lv.size(), 4));

  SyntheticModel before(cfg), after(cfg);
  const auto all = rt.tree.order_insertion();
  feed(before, rt.tree, all, rt.slots.num_slots());
  feed(after, rt.tree, all, rt.slots.num_slots());

  TokenTree gc_tree = rt.tree;
  const CompactionPlan plan = kv_collect_garbage(gc_tree, lv, rt.slots.num_slots());
  after.compact(plan);
  REQUIRE(plan.new_num_slots() < rt.slots.num_slots());

  // One new child under each live leaf, fed to both caches.
  TokenTree t1 = rt.tree, t2 = gc_tree;
  std::vector<int32_t> q1, q2;
  int32_t s1 = rt.slots.num_slots(), s2 = plan.new_num_slots();
  for (int32_t l : lv) {
    const int32_t a = t1.add_child(l, 3, 0), b = t2.add_child(l, 3, 0);
    t1.node(a).slot = s1++;
    t2.node(b).slot = s2++;
    q1.push_back(a);
    q2.push_back(b);
  }
  const Logits l1 = feed(before, t1, q1, s1);
  const Logits l2 = feed(after, t2, q2, s2);
  CHECK(l1.data == l2.data);
}

TEST_CASE("kv accounting: batch baseline and Mem/Tok follow the paper's definitions", "[kv]") {
  CHECK(batch_baseline_slots(3, 4, 3) == 21);  // Figure 1: 3 beams x 7 tokens
  KvShape s{32, 8, 128, 2};
  CHECK(s.bytes_per_slot() == 32 * 2 * 8 * 128 * 2);
  CHECK(mem_per_token(1000, 6, 4) == Approx(100.0));
}
