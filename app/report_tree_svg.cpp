#include "app/report_tree_svg.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "app/report_escape.h"

namespace triescope::cli {

namespace {
constexpr int kBoxW = 160, kBoxH = 34, kGapX = 10, kGapY = 16;
constexpr size_t kAncestorsShown = 5;  // of a longer path: the root, "...", the last kAncestorsShown - 1
constexpr size_t kRowNodesMax = 9;     // siblings or children shown, around the focus

// gui/step_colors.cpp's status colours.
const char* status_fill(NodeStatus s) {
  switch (s) {
    case NodeStatus::live: return "#4caf50";
    case NodeStatus::pruned: return "#b0b0b0";
    case NodeStatus::finished: return "#4285f4";
    case NodeStatus::accepted: return "#009688";
    case NodeStatus::rejected: return "#e53935";
  }
  return "#000";
}

struct Row {
  std::vector<int32_t> ids;  // -1: an elision box
  size_t elided = 0;
};

// At most kRowNodesMax of `ids`, a window holding `keep`.
std::vector<int32_t> around(const std::vector<int32_t>& ids, int32_t keep) {
  if (ids.size() <= kRowNodesMax) return ids;
  const auto it = std::find(ids.begin(), ids.end(), keep);
  const size_t at = it == ids.end() ? 0 : static_cast<size_t>(it - ids.begin());
  const size_t lo = std::min(at > kRowNodesMax / 2 ? at - kRowNodesMax / 2 : 0, ids.size() - kRowNodesMax);
  return {ids.begin() + static_cast<std::ptrdiff_t>(lo), ids.begin() + static_cast<std::ptrdiff_t>(lo + kRowNodesMax)};
}

std::vector<Row> rows_around(const StepView& v, int32_t focus) {
  std::vector<int32_t> path;  // root ... parent of focus
  for (int32_t a = v.nodes[static_cast<size_t>(focus)].parent; a >= 0 && static_cast<size_t>(a) < v.nodes.size();
       a = v.nodes[static_cast<size_t>(a)].parent)
    path.push_back(a);
  std::reverse(path.begin(), path.end());
  std::vector<Row> rows;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path.size() > kAncestorsShown && i == 1) {
      rows.push_back({{-1}, path.size() - kAncestorsShown});
      i = path.size() - kAncestorsShown + 1;
    }
    rows.push_back({{path[i]}, 0});
  }
  const int32_t parent = v.nodes[static_cast<size_t>(focus)].parent;
  std::vector<int32_t> siblings, children;
  for (const TreeNode& n : v.nodes) {
    if (n.parent == parent) siblings.push_back(n.id);
    if (n.parent == focus) children.push_back(n.id);
  }
  rows.push_back({around(siblings, focus), siblings.size() - std::min(siblings.size(), kRowNodesMax)});
  if (!children.empty()) rows.push_back({around(children, -1), children.size() - std::min(children.size(), kRowNodesMax)});
  return rows;
}

void box(std::ostringstream& os, const TraceReplay& t, const TreeNode& n, int x, int y, bool focus, bool marked) {
  os << "<g><rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << kBoxW << "\" height=\"" << kBoxH << "\" rx=\"5\" fill=\""
     << status_fill(n.status) << "\" fill-opacity=\"0.25\" stroke=\"" << (focus ? "#0096ff" : marked ? "#e6aa00" : "#555")
     << "\" stroke-width=\"" << (focus ? 4 : marked ? 3 : 1) << "\"" << (marked && !focus ? " stroke-dasharray=\"5 3\"" : "") << "/>";
  const std::string token = t.vocab().empty() ? "token " + std::to_string(n.token) : "\"" + text_shorten(t.token_text(n.token), 14) + "\"";
  os << "<text x=\"" << x + 6 << "\" y=\"" << y + 14 << "\" font-weight=\"600\">" << markup_escape(token) << "</text>";
  os << "<text x=\"" << x + 6 << "\" y=\"" << y + 29 << "\" fill=\"#333\">node " << n.id << " pos " << n.depth << " slot "
     << (n.slot < 0 ? std::string("-") : std::to_string(n.slot)) << "</text></g>\n";
}
}  // namespace

std::string tree_around_svg(const TraceReplay& t, const StepView& v, int32_t focus, const std::set<int32_t>& marked) {
  if (focus < 0 || static_cast<size_t>(focus) >= v.nodes.size()) return "";
  const std::vector<Row> rows = rows_around(v, focus);
  size_t widest = 1;
  for (const Row& r : rows) widest = std::max(widest, r.ids.size() + (r.elided > 0 && r.ids.front() >= 0 ? 1 : 0));
  const int width = static_cast<int>(widest) * (kBoxW + kGapX) + kGapX;
  const int height = static_cast<int>(rows.size()) * (kBoxH + kGapY) + kGapY;
  std::ostringstream os, edges, boxes;
  std::vector<std::pair<int, int>> prev_centres;  // bottom centres of the row above
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    const Row& row = rows[ri];
    const int y = kGapY / 2 + static_cast<int>(ri) * (kBoxH + kGapY);
    const int n = static_cast<int>(row.ids.size());
    const int x0 = (width - n * (kBoxW + kGapX) + kGapX) / 2;
    std::vector<std::pair<int, int>> centres;
    for (int k = 0; k < n; ++k) {
      const int x = x0 + k * (kBoxW + kGapX);
      const int32_t id = row.ids[static_cast<size_t>(k)];
      // Every box in a row hangs from the row above's box on the focus's path (the last ancestor, or the focus itself).
      if (!prev_centres.empty()) {
        const auto [px, py] = prev_centres.size() == 1 ? prev_centres.front() : prev_centres[prev_centres.size() / 2];
        edges << "<line x1=\"" << px << "\" y1=\"" << py << "\" x2=\"" << x + kBoxW / 2 << "\" y2=\"" << y << "\" stroke=\"#888\"/>\n";
      }
      if (id < 0) {
        boxes << "<text x=\"" << x + 8 << "\" y=\"" << y + 21 << "\" fill=\"#555\">... " << row.elided << " ancestors ...</text>\n";
      } else {
        box(boxes, t, v.nodes[static_cast<size_t>(id)], x, y, id == focus, marked.count(id) > 0);
      }
      if (id == focus || n == 1) centres = {{x + kBoxW / 2, y + kBoxH}};
    }
    if (row.elided > 0 && row.ids.front() >= 0)
      boxes << "<text x=\"" << x0 + n * (kBoxW + kGapX) << "\" y=\"" << y + 21 << "\" fill=\"#555\">+" << row.elided << " more</text>\n";
    prev_centres = centres;
  }
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" role=\"img\">\n"
     << edges.str() << boxes.str() << "</svg>\n";
  return os.str();
}

}  // namespace triescope::cli
