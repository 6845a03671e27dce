#include <catch2/catch.hpp>

#include "core/mask/ancestor_mask.h"
#include "random_tree.h"

using namespace triescope;

TEST_CASE("ancestor mask: every row is exactly the ancestor-or-self set, positions are depths", "[mask]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u, 5u);
  const int32_t extra = GENERATE(0, 1, 63, 200);
  CAPTURE(seed, extra);
  auto rt = test::random_tree(seed, 5, extra, 50);
  std::vector<int32_t> all = rt.tree.order_insertion();
  const BitMask m = ancestor_mask_build(rt.tree, all, rt.slots.num_slots());
  const auto pos = position_ids(rt.tree, all);
  for (int32_t q : all) {
    CAPTURE(q);
    CHECK(pos[static_cast<size_t>(q)] == rt.tree.node(q).depth);
    for (int32_t k : all) {
      const bool expect = rt.tree.is_ancestor_or_self(k, q);
      REQUIRE(m.test(q, rt.tree.node(k).slot) == expect);
    }
    CHECK(m.row_popcount(q) == rt.tree.node(q).depth + 1);
  }
}

TEST_CASE("ancestor mask: incremental per-step update equals the full build", "[mask]") {
  const uint32_t seed = GENERATE(11u, 12u, 13u);
  CAPTURE(seed);
  std::mt19937 rng(seed);
  TokenTree t;
  KvSlots slots;
  IncrementalAncestorMask inc;
  inc.reset(8);
  auto prompt = t.add_chain(kNoNode, {1, 2, 3});
  for (int32_t id : prompt) t.node(id).slot = slots.allocate();
  inc.extend(t, prompt, slots.num_slots());
  std::vector<int32_t> frontier = {prompt.back()};
  for (int step = 0; step < 40; ++step) {
    CAPTURE(step);
    // grow 1-4 children from random frontier nodes, like a beam step
    std::vector<int32_t> added;
    const int k = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int i = 0; i < k; ++i) {
      const int32_t parent = frontier[std::uniform_int_distribution<size_t>(0, frontier.size() - 1)(rng)];
      const int32_t id = t.add_child(parent, step, 0.0);
      t.node(id).slot = slots.allocate();
      added.push_back(id);
    }
    inc.retain(frontier);
    const BitMask got = inc.extend(t, added, slots.num_slots());
    const BitMask want = ancestor_mask_build(t, added, slots.num_slots());
    REQUIRE(got == want);
    frontier = added;
  }
  CHECK(inc.fallback_rows() == 0);  // every parent row was held: no ancestor walks
}

TEST_CASE("ancestor mask: incremental falls back to the walk for a parent it does not hold", "[mask]") {
  auto rt = test::random_tree(7, 4, 30, 20);
  IncrementalAncestorMask inc;
  inc.reset();
  const int32_t parent = 20;
  const int32_t id = rt.tree.add_child(parent, 3, 0.0);
  rt.tree.node(id).slot = rt.slots.allocate();
  const BitMask got = inc.extend(rt.tree, {id}, rt.slots.num_slots());
  CHECK(got == ancestor_mask_build(rt.tree, {id}, rt.slots.num_slots()));
  CHECK(inc.fallback_rows() == 1);
}

TEST_CASE("bit mask: hex rows round trip and reject bits past the last column", "[mask]") {
  BitMask m(2, 70);
  m.set(0, 0);
  m.set(0, 69);
  m.set(1, 64);
  BitMask back(2, 70);
  for (int r = 0; r < 2; ++r) REQUIRE(back.set_row_hex(r, m.row_hex(r)));
  CHECK(back == m);
  CHECK(m.row_hex(0).size() == 18);  // ceil(70 / 8) bytes
  CHECK_FALSE(back.set_row_hex(0, std::string(18, 'f')));  // bits 70..71 set
  CHECK_FALSE(back.set_row_hex(0, "zz"));
}
