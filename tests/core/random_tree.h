// Random trees for property tests: a prompt chain, then nodes attached to
// random earlier nodes, each given the next KV slot.
#pragma once
#include <random>
#include <vector>

#include "core/kv/kv_cache.h"
#include "core/tree/token_tree.h"

namespace triescope::test {

struct RandomTree {
  TokenTree tree;
  KvSlots slots;
};

inline RandomTree random_tree(uint32_t seed, int32_t prompt_len, int32_t extra_nodes, int32_t vocab,
                              int32_t branch_window = 8) {
  std::mt19937 rng(seed);
  RandomTree r;
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  std::vector<int32_t> chain;
  for (int32_t i = 0; i < prompt_len; ++i) chain.push_back(tok(rng));
  for (int32_t id : r.tree.add_chain(kNoNode, chain)) r.tree.node(id).slot = r.slots.allocate();
  for (int32_t i = 0; i < extra_nodes; ++i) {
    // parents drawn from the last `branch_window` nodes: deep, bushy trees
    const int32_t lo = std::max(0, r.tree.size() - branch_window);
    const int32_t parent = std::uniform_int_distribution<int32_t>(lo, r.tree.size() - 1)(rng);
    const int32_t id = r.tree.add_child(parent, tok(rng), -0.1 * i);
    r.tree.node(id).slot = r.slots.allocate();
  }
  return r;
}

inline std::vector<int32_t> leaves(const TokenTree& t) {
  std::vector<int32_t> out;
  for (const auto& n : t.nodes())
    if (t.children(n.id).empty()) out.push_back(n.id);
  return out;
}

}  // namespace triescope::test
