#include <catch2/catch.hpp>

#include <random>

#include "core/tree/token_tree.h"

using namespace triescope;

TEST_CASE("token tree: depth is parent's depth + 1, ids are dense", "[tree]") {
  TokenTree t;
  auto chain = t.add_chain(kNoNode, {5, 6, 7});
  REQUIRE(chain == std::vector<int32_t>{0, 1, 2});
  const int32_t a = t.add_child(2, 8, -1.0);
  const int32_t b = t.add_child(2, 9, -2.0);
  CHECK(t.node(a).depth == 3);
  CHECK(t.node(b).depth == 3);
  CHECK(t.path_tokens(b) == std::vector<int32_t>{5, 6, 7, 9});
  CHECK(t.is_ancestor_or_self(0, b));
  CHECK(t.is_ancestor_or_self(b, b));
  CHECK_FALSE(t.is_ancestor_or_self(a, b));
}

TEST_CASE("token tree: DFS order lays each tree of a forest out contiguously", "[tree]") {
  TokenTree t;
  const int32_t r0 = t.add_root(1), r1 = t.add_root(2);
  const int32_t a = t.add_child(r0, 3, 0), b = t.add_child(r1, 4, 0), c = t.add_child(r0, 5, 0), d = t.add_child(a, 6, 0);
  CHECK(t.order_insertion() == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(t.order_dfs() == std::vector<int32_t>{r0, a, d, c, r1, b});
}

TEST_CASE("token tree: pruning climbs until a live sibling keeps the branch", "[tree]") {
  TokenTree t;
  const int32_t r = t.add_root(0);
  const int32_t x = t.add_child(r, 1, 0), y = t.add_child(r, 2, 0);
  const int32_t x1 = t.add_child(x, 3, 0);
  t.prune_upwards(x1);
  CHECK(t.node(x1).status == NodeStatus::pruned);
  CHECK(t.node(x).status == NodeStatus::pruned);
  CHECK(t.node(r).status == NodeStatus::live);  // y is still live
  CHECK(t.node(y).status == NodeStatus::live);
}

TEST_CASE("token tree: a finished (EOS) child keeps no ancestor alive; the floor depth keeps the prompt", "[tree]") {
  // Trie beam search with EOS (issue 15, defect 1): P's children are one
  // EOS-finished node and one beam that dies; P must be pruned, not left live.
  TokenTree t;
  const std::vector<int32_t> prompt = t.add_chain(kNoNode, {0, 1});
  const int32_t p = t.add_child(prompt.back(), 2, 0);
  const int32_t eos = t.add_child(p, 9, 0), c = t.add_child(p, 3, 0);
  t.node(eos).status = NodeStatus::finished;
  const std::vector<int32_t> changed = t.prune_upwards(c, 2);
  CHECK(changed == std::vector<int32_t>{c, p});
  CHECK(t.node(p).status == NodeStatus::pruned);
  CHECK(t.node(eos).status == NodeStatus::finished);
  CHECK(t.node(prompt.back()).status == NodeStatus::live);  // above the floor depth
  CHECK(t.node(prompt.front()).status == NodeStatus::live);
}
