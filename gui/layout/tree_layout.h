// Headless layout of a token tree/forest (Hotspot's callgraph layout split):
// no Qt, no display; returns plain positions and edge splines that a view
// turns into graphics items. Graphviz "dot" for trees it can lay out in time,
// a tidy-tree layout (Reingold-Tilford style, leaves packed left to right)
// past that size (docs/benchmarks-gui.md has the measured cut-over).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace triescope::layout {

struct LayoutNode {
  int32_t id = -1;      // caller's id (a tree node id)
  int32_t parent = -1;  // caller's id of the parent, -1 for a root
  double width = 60;    // box size in points (1/72 in), label included
  double height = 28;
};

struct Point {
  double x = 0, y = 0;
};

struct LayoutEdge {
  int32_t from = -1, to = -1;  // caller ids
  std::vector<Point> spline;   // cubic Bezier control points: p0, (c1, c2, p)*; y grows downwards
};

enum class LayoutEngine { dot, tidy };

struct LayoutResult {
  LayoutEngine engine = LayoutEngine::tidy;
  std::vector<Point> centers;   // [nodes] box centre of input node i (same order as the input)
  std::vector<LayoutEdge> edges;
  double width = 0, height = 0;  // bounding box, origin at (0, 0)
};

struct LayoutOptions {
  double rank_sep = 36;   // vertical gap between depths, points
  double node_sep = 14;   // horizontal gap between siblings, points
  // Trees with more nodes than this use the tidy layout; dot's time grows
  // super-linearly (measured in docs/benchmarks-gui.md).
  int32_t max_dot_nodes = 200;
};

// Nodes must list every parent before its children (ascending ids do).
// Throws std::runtime_error when a parent is missing.
LayoutResult tree_layout(const std::vector<LayoutNode>& nodes, const LayoutOptions& opt = {});
LayoutResult tree_layout_dot(const std::vector<LayoutNode>& nodes, const LayoutOptions& opt = {});
LayoutResult tree_layout_tidy(const std::vector<LayoutNode>& nodes, const LayoutOptions& opt = {});

const char* layout_engine_name(LayoutEngine e);

}  // namespace triescope::layout
