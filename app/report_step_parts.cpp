#include "app/report_step_parts.h"

#include <sstream>

#include "app/report_escape.h"

namespace triescope::cli {

namespace {
constexpr size_t kRecordCharsMax = 200000;  // a keyframe of a long decode can be megabytes
constexpr size_t kTokenChars = 16;
}  // namespace

std::string node_text(const TraceReplay& t, const std::vector<TreeNode>& nodes, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= nodes.size()) return "node " + std::to_string(id);
  const int32_t token = nodes[static_cast<size_t>(id)].token;
  if (t.vocab().empty()) return "node " + std::to_string(id) + " (token " + std::to_string(token) + ")";
  return "node " + std::to_string(id) + " \"" + text_shorten(t.token_text(token), kTokenChars) + "\"";
}

std::string positions_html(const std::string& title, const TraceReplay& t, const StepView& v, const ForwardView& f, int32_t row0,
                           int32_t row1, const std::set<int32_t>& marked) {
  std::ostringstream os;
  os << "<h3>" << markup_escape(title) << "</h3><table class=\"strip\"><tr><th>row</th>";
  for (int32_t r = row0; r < row1; ++r) os << "<th>" << r << "</th>";
  os << "</tr><tr><th>query</th>";
  for (int32_t r = row0; r < row1; ++r) {
    const bool has = static_cast<size_t>(r) < f.queries.size();
    os << "<td" << (marked.count(r) ? " class=\"mark\"" : "") << ">"
       << (has ? markup_escape(node_text(t, v.nodes, f.queries[static_cast<size_t>(r)])) : std::string("-")) << "</td>";
  }
  os << "</tr><tr><th>position id</th>";
  for (int32_t r = row0; r < row1; ++r)
    os << "<td" << (marked.count(r) ? " class=\"mark\"" : "") << ">"
       << (static_cast<size_t>(r) < f.positions.size() ? std::to_string(f.positions[static_cast<size_t>(r)]) : std::string("-")) << "</td>";
  os << "</tr><tr><th>slot written</th>";
  for (int32_t r = row0; r < row1; ++r)
    os << "<td>" << (static_cast<size_t>(r) < f.slots.size() ? std::to_string(f.slots[static_cast<size_t>(r)]) : std::string("-"))
       << "</td>";
  os << "</tr></table>\n";
  return os.str();
}

std::string kv_layout_html(const std::string& title, const TraceReplay& t, const StepView& v, const std::vector<int32_t>& slot_to_node,
                           int32_t col0, int32_t col1, const std::set<int32_t>& marked) {
  std::ostringstream os;
  os << "<h3>" << markup_escape(title) << "</h3><table class=\"strip\"><tr><th>slot</th>";
  for (int32_t s = col0; s < col1; ++s) os << "<th>" << s << "</th>";
  os << "</tr><tr><th>node</th>";
  for (int32_t s = col0; s < col1; ++s) {
    const int32_t id = static_cast<size_t>(s) < slot_to_node.size() ? slot_to_node[static_cast<size_t>(s)] : -1;
    os << "<td class=\"" << (marked.count(s) ? "mark" : id < 0 ? "free" : "") << "\">"
       << (id < 0 ? std::string("free") : markup_escape(node_text(t, v.nodes, id))) << "</td>";
  }
  os << "</tr></table>\n";
  return os.str();
}

std::string raw_records_html(const std::string& title, const std::vector<nlohmann::json>& records) {
  std::ostringstream os;
  os << "<details open><summary>" << markup_escape(title) << "</summary>\n";
  for (const nlohmann::json& r : records) {
    std::string text = r.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > kRecordCharsMax)
      text = text_shorten(text, kRecordCharsMax) + "\n(record cut at " + std::to_string(kRecordCharsMax) + " of " +
             std::to_string(text.size()) + " characters)";
    os << "<pre>" << markup_escape(text) << "</pre>\n";
  }
  os << "</details>\n";
  return os.str();
}

}  // namespace triescope::cli
