// The headless layout library, without a display: dot and tidy layouts of
// random trees keep every box apart, children below parents, edges joining
// the right boxes; big trees fall back to tidy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "gui/layout/tree_layout.h"

using namespace triescope::layout;

namespace {
std::vector<LayoutNode> random_forest(int n, int roots, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<LayoutNode> v;
  for (int i = 0; i < n; ++i) {
    LayoutNode x;
    x.id = 100 + i;  // ids need not be indices
    // Trie-like: attach to one of the last few nodes (long chains, some branching).
    const int lo = std::max(0, i - 6);
    x.parent = i < roots ? -1 : 100 + lo + static_cast<int>(rng() % static_cast<uint32_t>(i - lo));
    x.width = 30 + rng() % 60;
    x.height = 20 + rng() % 12;
    v.push_back(x);
  }
  return v;
}

void check_layout(const std::vector<LayoutNode>& in, const LayoutResult& r) {
  REQUIRE(r.centers.size() == in.size());
  std::vector<double> l(in.size()), t(in.size()), rr(in.size()), b(in.size());
  std::unordered_map<int, size_t> idx;
  for (size_t i = 0; i < in.size(); ++i) {
    l[i] = r.centers[i].x - in[i].width / 2;
    rr[i] = r.centers[i].x + in[i].width / 2;
    t[i] = r.centers[i].y - in[i].height / 2;
    b[i] = r.centers[i].y + in[i].height / 2;
    idx[in[i].id] = i;
    CHECK(l[i] >= -1.0);
    CHECK(t[i] >= -1.0);
    CHECK(rr[i] <= r.width + 1.0);
    CHECK(b[i] <= r.height + 1.0);
  }
  size_t roots = 0, overlaps = 0, inverted = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].parent < 0) ++roots;
    else if (!(t[i] > b[idx.at(in[i].parent)])) ++inverted;  // a child sits entirely below its parent
  }
  // Sweep by left edge: no two boxes intersect.
  std::vector<size_t> order(in.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t c) { return l[a] < l[c]; });
  for (size_t a = 0; a < order.size(); ++a)
    for (size_t c = a + 1; c < order.size() && l[order[c]] < rr[order[a]] - 0.5; ++c) {
      const size_t i = order[a], j = order[c];
      if (t[i] < b[j] - 0.5 && t[j] < b[i] - 0.5) ++overlaps;
    }
  CHECK(overlaps == 0);
  CHECK(inverted == 0);
  REQUIRE(r.edges.size() == in.size() - roots);
  for (const auto& e : r.edges) {
    REQUIRE(e.spline.size() >= 4);
    CHECK((e.spline.size() - 1) % 3 == 0);
    const size_t p = idx.at(e.from), c = idx.at(e.to);
    CHECK(in[c].parent == e.from);
    // The curve starts at the parent's box and ends at the child's (3 pt slack).
    const auto near_box = [&](Point q, size_t i) {
      return q.x >= l[i] - 3 && q.x <= rr[i] + 3 && q.y >= t[i] - 3 && q.y <= b[i] + 3;
    };
    CHECK(near_box(e.spline.front(), p));
    CHECK(near_box(e.spline.back(), c));
  }
}
}  // namespace

TEST_CASE("tidy layout of random forests", "[gui][layout]") {
  const int n = GENERATE(1, 2, 17, 300, 5000);
  const int roots = GENERATE(1, 3);
  const uint32_t seed = GENERATE(1u, 7u);
  CAPTURE(n, roots, seed);
  const auto in = random_forest(std::max(n, roots), roots, seed);
  const LayoutResult r = tree_layout_tidy(in);
  CHECK(r.engine == LayoutEngine::tidy);
  check_layout(in, r);
}

TEST_CASE("dot layout of random trees", "[gui][layout]") {
  const int n = GENERATE(1, 5, 60);
  const uint32_t seed = GENERATE(3u, 11u);
  CAPTURE(n, seed);
  const auto in = random_forest(n, 1, seed);
  const LayoutResult r = tree_layout_dot(in);
  CHECK(r.engine == LayoutEngine::dot);
  check_layout(in, r);
}

TEST_CASE("tree_layout picks dot up to max_dot_nodes and tidy past it", "[gui][layout]") {
  const auto in = random_forest(40, 1, 5);
  LayoutOptions opt;
  opt.max_dot_nodes = 40;
  CHECK(tree_layout(in, opt).engine == LayoutEngine::dot);
  opt.max_dot_nodes = 39;
  CHECK(tree_layout(in, opt).engine == LayoutEngine::tidy);
}

TEST_CASE("layout rejects a child listed before its parent", "[gui][layout]") {
  std::vector<LayoutNode> in = {{1, 2, 40, 20}, {2, -1, 40, 20}};
  CHECK_THROWS_WITH(tree_layout_tidy(in), Catch::Contains("node 1") && Catch::Contains("parent 2"));
  CHECK_THROWS(tree_layout_dot(in));
}

TEST_CASE("empty layouts", "[gui][layout]") {
  CHECK(tree_layout_tidy({}).centers.empty());
  CHECK(tree_layout_dot({}).centers.empty());
}
