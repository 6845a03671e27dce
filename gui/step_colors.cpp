#include "gui/step_colors.h"

namespace triescope::gui {

QColor status_color(NodeStatus s) {
  switch (s) {
    case NodeStatus::live: return {76, 175, 80};
    case NodeStatus::pruned: return {176, 176, 176};
    case NodeStatus::finished: return {66, 133, 244};
    case NodeStatus::accepted: return {0, 150, 136};
    case NodeStatus::rejected: return {229, 57, 53};
  }
  return Qt::black;
}

QString status_text(NodeStatus s) { return QString::fromUtf8(node_status_name(s).data(), int(node_status_name(s).size())); }

std::vector<int32_t> node_branches(const StepView& v) {
  const size_t n = v.nodes.size();
  std::vector<int32_t> leaves(n, 0), branch(n, -1);
  std::vector<char> has_child(n, 0);
  for (const auto& nd : v.nodes)
    if (nd.parent >= 0 && static_cast<size_t>(nd.parent) < n) has_child[static_cast<size_t>(nd.parent)] = 1;
  // Ids are dense and a child's id is larger than its parent's (TokenTree).
  for (size_t i = n; i-- > 0;) {
    if (v.nodes[i].id < 0) continue;
    if (!has_child[i]) leaves[i] += 1;
    const int32_t p = v.nodes[i].parent;
    if (p >= 0 && static_cast<size_t>(p) < n) leaves[static_cast<size_t>(p)] += leaves[i];
  }
  for (size_t i = 0; i < n; ++i) {
    if (v.nodes[i].id < 0 || leaves[i] != 1) continue;
    const int32_t p = v.nodes[i].parent;
    branch[i] = (p >= 0 && static_cast<size_t>(p) < n && leaves[static_cast<size_t>(p)] == 1) ? branch[static_cast<size_t>(p)]
                                                                                               : static_cast<int32_t>(i);
  }
  return branch;
}

QColor branch_color(int32_t branch) {
  if (branch < 0) return kSharedBranch;
  // Golden-ratio hue steps keep neighbouring branch ids far apart in hue.
  const double h = std::fmod(0.13 + branch * 0.618033988749895, 1.0);
  return QColor::fromHsvF(static_cast<float>(h), 0.55f, 0.93f);
}

QString token_label(const TraceReplay& r, int32_t token, int max_chars) {
  QString s = QString::fromStdString(r.token_text(token));
  s.replace(' ', QChar(0x2423)).replace('\n', QStringLiteral("\\n")).replace('\t', QStringLiteral("\\t"));
  if (s.size() > max_chars) s = s.left(max_chars - 1) + QChar(0x2026);
  return s;
}

QString node_token_label(const StepView& v, const TraceReplay& r, int32_t node, int max_chars, const QString& absent) {
  return node >= 0 && static_cast<size_t>(node) < v.nodes.size() ? token_label(r, v.nodes[static_cast<size_t>(node)].token, max_chars) : absent;
}

}  // namespace triescope::gui
