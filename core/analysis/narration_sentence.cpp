#include "core/analysis/narration_sentence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace triescope {

std::string narration_node_label(const StepView& view, const TraceReplay& replay, int32_t node) {
  const std::string id = "#" + std::to_string(node);
  if (node < 0 || static_cast<size_t>(node) >= view.nodes.size()) return id;
  const int32_t token = view.nodes[static_cast<size_t>(node)].token;
  // Without a vocabulary entry the token is a number; say so rather than quote it as text.
  if (token < 0 || static_cast<size_t>(token) >= replay.vocab().size()) return "token " + std::to_string(token) + " " + id;
  return "'" + replay.token_text(token) + "' " + id;
}

std::string narration_text(const NarrationSentence& s) {
  std::string out;
  for (const NarrationSegment& g : s.segments) out += g.text;
  return out;
}

std::string narration_score(double x) {
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

NarrationBuilder::NarrationBuilder(const StepView& view, const TraceReplay& replay, std::string topic) : view_(view), replay_(replay) {
  s_.topic = std::move(topic);
}

NarrationBuilder& NarrationBuilder::text(const std::string& t) {
  if (t.empty()) return *this;
  // Consecutive text joins one segment, so a viewer gets one run per link gap.
  if (!s_.segments.empty() && s_.segments.back().node < 0) s_.segments.back().text += t;
  else s_.segments.push_back({t, -1});
  return *this;
}

NarrationBuilder& NarrationBuilder::node(int32_t id) {
  const std::string label = narration_node_label(view_, replay_, id);
  // A node the view does not hold is named but not linked: a click would select nothing.
  if (id < 0 || static_cast<size_t>(id) >= view_.nodes.size()) return text(label);
  s_.segments.push_back({label, id});
  return *this;
}

NarrationBuilder& NarrationBuilder::nodes(const std::vector<int32_t>& ids, size_t max) {
  const size_t shown = std::min(ids.size(), max);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) text(i + 1 == shown && shown == ids.size() ? " and " : ", ");
    node(ids[i]);
  }
  if (shown < ids.size()) text(" and " + std::to_string(ids.size() - shown) + " more");
  return *this;
}

}  // namespace triescope
