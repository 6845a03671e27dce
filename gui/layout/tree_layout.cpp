#include "gui/layout/tree_layout.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

namespace triescope::layout {

const char* layout_engine_name(LayoutEngine e) { return e == LayoutEngine::dot ? "dot" : "tidy"; }

namespace {

// Index of each node's parent in the input (-1 for roots); validates order.
std::vector<int32_t> parent_index(const std::vector<LayoutNode>& nodes) {
  std::unordered_map<int32_t, int32_t> index;
  index.reserve(nodes.size() * 2);
  std::vector<int32_t> parent(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].parent >= 0) {
      auto it = index.find(nodes[i].parent);
      if (it == index.end())
        throw std::runtime_error("tree_layout: node " + std::to_string(nodes[i].id) + " lists parent " +
                                 std::to_string(nodes[i].parent) + " before (or without) it");
      parent[i] = it->second;
    }
    index[nodes[i].id] = static_cast<int32_t>(i);
  }
  return parent;
}

// Graphviz keeps global state (plugins, the error buffer); one context and one
// layout at a time.
std::mutex& gv_mutex() {
  static std::mutex m;
  return m;
}
GVC_t* gv_context() {
  static GVC_t* ctx = gvContext();
  return ctx;
}

void set_attr(void* obj, int kind, Agraph_t* g, const char* name, const std::string& value) {
  agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
  (void)kind;
  (void)g;
}

}  // namespace

LayoutResult tree_layout_tidy(const std::vector<LayoutNode>& nodes, const LayoutOptions& opt) {
  const std::vector<int32_t> parent = parent_index(nodes);
  const size_t n = nodes.size();
  LayoutResult r;
  r.engine = LayoutEngine::tidy;
  r.centers.resize(n);
  if (n == 0) return r;
  std::vector<std::vector<int32_t>> children(n);
  std::vector<int32_t> roots, level(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (parent[i] < 0) roots.push_back(static_cast<int32_t>(i));
    else {
      children[static_cast<size_t>(parent[i])].push_back(static_cast<int32_t>(i));
      level[i] = level[static_cast<size_t>(parent[i])] + 1;
    }
  }
  const int32_t levels = *std::max_element(level.begin(), level.end()) + 1;
  std::vector<double> level_h(static_cast<size_t>(levels), 0), level_y(static_cast<size_t>(levels), 0);
  for (size_t i = 0; i < n; ++i) level_h[static_cast<size_t>(level[i])] = std::max(level_h[static_cast<size_t>(level[i])], nodes[i].height);
  double y = 0;
  for (int32_t l = 0; l < levels; ++l) {
    level_y[static_cast<size_t>(l)] = y + level_h[static_cast<size_t>(l)] / 2;
    y += level_h[static_cast<size_t>(l)] + opt.rank_sep;
  }
  // Each subtree owns a disjoint x interval [start, cursor): leaves are
  // packed left to right in DFS order, a parent is centred over its first and
  // last child, and a parent wider than its children's span shifts its whole
  // subtree right (applied lazily below), so no two boxes overlap and the
  // layout stays O(n). Iterative post-order.
  double cursor = 0;
  std::vector<double> start(n, 0), shift(n, 0);
  std::vector<std::pair<int32_t, size_t>> stack;
  for (int32_t root : roots) {
    start[static_cast<size_t>(root)] = cursor;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      const auto& ch = children[static_cast<size_t>(v)];
      if (next < ch.size()) {
        const int32_t c = ch[next++];
        start[static_cast<size_t>(c)] = cursor;
        stack.emplace_back(c, 0);
        continue;
      }
      const auto vi = static_cast<size_t>(v);
      const double half = nodes[vi].width / 2;
      double x;
      if (ch.empty()) {
        x = cursor + half;
      } else {
        x = (r.centers[static_cast<size_t>(ch.front())].x + r.centers[static_cast<size_t>(ch.back())].x) / 2;
        if (x - half < start[vi]) {
          shift[vi] = start[vi] - (x - half);  // moves the children; v itself is placed shifted
          x += shift[vi];
          cursor += shift[vi];
        }
      }
      cursor = std::max(cursor, x + half + opt.node_sep);
      r.centers[vi] = {x, level_y[static_cast<size_t>(level[vi])]};
      stack.pop_back();
    }
  }
  // Parents precede children in the input: push each node's shift down.
  std::vector<double> acc(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (parent[i] >= 0) {
      const auto p = static_cast<size_t>(parent[i]);
      acc[i] = acc[p] + shift[p];
      r.centers[i].x += acc[i];
    }
  for (size_t i = 0; i < n; ++i) {
    r.width = std::max(r.width, r.centers[i].x + nodes[i].width / 2);
    if (parent[i] >= 0) {
      const Point a = r.centers[static_cast<size_t>(parent[i])], b = r.centers[i];
      const double ya = a.y + nodes[static_cast<size_t>(parent[i])].height / 2, yb = b.y - nodes[i].height / 2;
      const double ym = (ya + yb) / 2;
      r.edges.push_back({nodes[static_cast<size_t>(parent[i])].id, nodes[i].id, {{a.x, ya}, {a.x, ym}, {b.x, ym}, {b.x, yb}}});
    }
  }
  r.height = y - opt.rank_sep;
  return r;
}

LayoutResult tree_layout_dot(const std::vector<LayoutNode>& nodes, const LayoutOptions& opt) {
  const std::vector<int32_t> parent = parent_index(nodes);
  LayoutResult r;
  r.engine = LayoutEngine::dot;
  r.centers.resize(nodes.size());
  if (nodes.empty()) return r;
  std::lock_guard<std::mutex> lock(gv_mutex());
  GVC_t* gvc = gv_context();
  Agraph_t* g = agopen(const_cast<char*>("trie"), Agdirected, nullptr);
  set_attr(g, AGRAPH, g, "ranksep", std::to_string(opt.rank_sep / 72.0));
  set_attr(g, AGRAPH, g, "nodesep", std::to_string(opt.node_sep / 72.0));
  set_attr(g, AGRAPH, g, "ordering", "out");  // keep children in insertion (beam) order
  agattr(g, AGNODE, const_cast<char*>("shape"), const_cast<char*>("box"));
  agattr(g, AGNODE, const_cast<char*>("fixedsize"), const_cast<char*>("true"));
  agattr(g, AGNODE, const_cast<char*>("label"), const_cast<char*>(""));
  agattr(g, AGNODE, const_cast<char*>("width"), const_cast<char*>("0.75"));
  agattr(g, AGNODE, const_cast<char*>("height"), const_cast<char*>("0.5"));
  agattr(g, AGEDGE, const_cast<char*>("dir"), const_cast<char*>("none"));  // no arrow: the spline ends at the box
  std::vector<Agnode_t*> gn(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string name = "n" + std::to_string(i);
    gn[i] = agnode(g, const_cast<char*>(name.c_str()), 1);
    agset(gn[i], const_cast<char*>("width"), const_cast<char*>(std::to_string(nodes[i].width / 72.0).c_str()));
    agset(gn[i], const_cast<char*>("height"), const_cast<char*>(std::to_string(nodes[i].height / 72.0).c_str()));
  }
  std::vector<std::pair<Agedge_t*, size_t>> ge;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (parent[i] >= 0) ge.emplace_back(agedge(g, gn[static_cast<size_t>(parent[i])], gn[i], nullptr, 1), i);
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    throw std::runtime_error("tree_layout: graphviz dot layout failed");
  }
  const boxf bb = GD_bb(g);
  // Graphviz has y growing upwards with the origin at the bounding box's
  // lower left; views have y growing downwards.
  auto conv = [&](pointf p) { return Point{p.x - bb.LL.x, bb.UR.y - p.y}; };
  for (size_t i = 0; i < nodes.size(); ++i) r.centers[i] = conv(ND_coord(gn[i]));
  for (auto& [e, i] : ge) {
    LayoutEdge le{nodes[static_cast<size_t>(parent[i])].id, nodes[i].id, {}};
    const splines* spl = ED_spl(e);
    if (spl && spl->size > 0) {
      const bezier& bz = spl->list[0];
      for (int k = 0; k < bz.size; ++k) le.spline.push_back(conv(bz.list[k]));
    }
    r.edges.push_back(std::move(le));
  }
  r.width = bb.UR.x - bb.LL.x;
  r.height = bb.UR.y - bb.LL.y;
  gvFreeLayout(gvc, g);
  agclose(g);
  return r;
}

LayoutResult tree_layout(const std::vector<LayoutNode>& nodes, const LayoutOptions& opt) {
  if (static_cast<int64_t>(nodes.size()) > opt.max_dot_nodes) return tree_layout_tidy(nodes, opt);
  return tree_layout_dot(nodes, opt);
}

}  // namespace triescope::layout
