#include "app/report_diff_step.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "app/report_escape.h"
#include "app/report_mask_grid.h"
#include "app/report_step_parts.h"
#include "app/report_tree_svg.h"
#include "core/analysis/forward_layout.h"

namespace triescope::cli {

namespace {
constexpr size_t kRecordDivergencesMax = 20000;  // cells marked; a whole-mask divergence can be millions

bool has_step(const TraceReplay& t, int32_t step) { return std::binary_search(t.steps().begin(), t.steps().end(), step); }

// The pass `pass` of `step`'s step record, parsed; nullopt when absent.
std::optional<ForwardView> step_pass(const TraceReplay& t, const std::vector<nlohmann::json>& records, const std::string& pass) {
  for (const nlohmann::json& r : records) {
    if (r.value("kind", std::string()) != "step") continue;
    const nlohmann::json* p = divergence_pass(r, pass);
    if (!p) return std::nullopt;
    ForwardView f;
    forward_view_parse(*p, t.origin() + ": step " + std::to_string(r.value("step", -1)) + ": " + pass, f);
    return f;
  }
  return std::nullopt;
}

struct Marks {
  std::set<std::pair<int32_t, int32_t>> cells;  // (row, column) bits that differ
  std::set<int32_t> rows;                       // rows whose query, position or slot differ
};

// Every divergence of the record (the one comparison, run on the two records alone) in pass `pass`.
Marks record_marks(const nlohmann::json& ra, const nlohmann::json& rb, const std::string& pass, const TraceDiffOptions& opt) {
  Marks m;
  for (const TraceDivergence& dd : trace_diff_all(std::vector<nlohmann::json>{ra}, std::vector<nlohmann::json>{rb}, opt, kRecordDivergencesMax)) {
    const DivergenceFocus f = divergence_focus(dd, ra);
    if (f.pass != pass) continue;
    if (f.col >= 0) m.cells.emplace(f.row, f.col);
    else if (f.row >= 0) m.rows.insert(f.row);
  }
  return m;
}

// A's and B's masks, then the trees (HTML), in one row as the inspector's panes.
std::string side_grids(const std::string& trees, const TraceReplay& a, const StepView& va, const ForwardView& fa, const TraceReplay& b, const StepView& vb,
                       const ForwardView& fb, const Marks& m, const DivergenceFocus& focus, GridWindow& w) {
  const int32_t rows = std::max(fa.mask.rows, fb.mask.rows), cols = std::max(fa.mask.cols, fb.mask.cols);
  w = grid_window(rows, cols, focus.row, focus.col);
  std::set<int32_t> focus_rows = m.rows;
  if (focus.row >= 0) focus_rows.insert(focus.row);
  auto grid = [&](const char* title, const TraceReplay& t, const StepView& v, const ForwardView& f) {
    MaskGridSpec g;
    g.title = title;
    g.rows = f.mask.rows;
    g.cols = f.mask.cols;
    g.window = w;
    g.row_label = [&](int32_t r) {
      if (r >= f.mask.rows) return std::string("-");
      std::string s = std::to_string(r) + ": ";
      if (static_cast<size_t>(r) < f.queries.size()) s += node_text(t, v.nodes, f.queries[static_cast<size_t>(r)]) + " ";
      if (static_cast<size_t>(r) < f.positions.size()) s += "p" + std::to_string(f.positions[static_cast<size_t>(r)]);
      return s;
    };
    g.bit = [&](int32_t r, int32_t c) { return r < f.mask.rows && c < f.mask.cols ? int(f.mask.test(r, c)) : -1; };
    g.marked = [&](int32_t r, int32_t c) { return m.cells.count({r, c}) > 0; };
    g.mark_class = "differ";
    g.focus_rows = focus_rows;
    return mask_grid_html(g);
  };
  std::ostringstream os;
  os << "<div class=\"side\">" << grid("A: recorded mask", a, va, fa) << grid("B: recorded mask", b, vb, fb) << trees << "</div>\n"
     << "<div class=\"legend\">cells:<span style=\"background:#2154aa\"></span>attends<span style=\"background:#f0f0f3\"></span>masked"
        "<span style=\"background:#dc008c\"></span>differs (set here)<span style=\"background:#ffc2e6\"></span>differs (clear here)</div>\n";
  return os.str();
}
}  // namespace

std::string diff_step_html(const TraceReplay& a, const TraceReplay& b, const TraceDivergence& d, const DivergenceFocus& focus,
                           const nlohmann::json& ra, const nlohmann::json& rb, const TraceDiffOptions& opt) {
  const int32_t step = static_cast<int32_t>(d.step);
  std::ostringstream os;
  if (!has_step(a, step) || !has_step(b, step)) {
    os << "<p>Step " << step << " is not in both traces: no step view.</p>\n";
    return os.str();
  }
  const StepView va = a.at(step), vb = b.at(step);
  os << "<section id=\"step-" << step << "\"><h2>Step " << step << (va.phase.empty() ? "" : " (" + markup_escape(va.phase) + ")")
     << " in A and B</h2>\n";
  // The tree around the node: one picture when A's and B's are the same, else both.
  std::string trees;
  if (focus.node >= 0) {
    const std::string ta = tree_around_svg(a, va, focus.node, {}), tb = tree_around_svg(b, vb, focus.node, {});
    trees = "<div><h3>" + std::string(ta == tb ? "A and B" : "A") + ": tree around " + markup_escape(node_text(a, va.nodes, focus.node)) +
            "</h3>" + ta + "</div>";
    if (ta != tb) trees += "<div><h3>B: tree around " + markup_escape(node_text(b, vb.nodes, focus.node)) + "</h3>" + tb + "</div>";
  }
  const std::string pass = focus.pass.empty() ? std::string(kForwardField) : focus.pass;
  const std::vector<nlohmann::json> recs_a = a.records_of_step(step), recs_b = b.records_of_step(step);
  const std::optional<ForwardView> fa = step_pass(a, recs_a, pass), fb = step_pass(b, recs_b, pass);
  if (!(fa && fb)) os << "<div class=\"side\">" << trees << "</div>\n";
  if (fa && fb) {
    const Marks m = record_marks(ra, rb, pass, opt);
    GridWindow w;
    os << "<h3>Pass " << markup_escape(pass) << "</h3>\n" << side_grids(trees, a, va, *fa, b, vb, *fb, m, focus, w);
    std::set<int32_t> rows = m.rows;
    if (focus.row >= 0) rows.insert(focus.row);
    std::set<int32_t> slots;
    if (focus.slot >= 0) slots.insert(focus.slot);
    const ForwardLayout la = forward_layout(va, a.gc_after_forward(step));
    const ForwardLayout lb = forward_layout(vb, b.gc_after_forward(step));
    auto upto = [&](const ForwardLayout& l) { return std::min<int32_t>(w.col1, static_cast<int32_t>(l.slot_to_node.size())); };
    os << "<div class=\"side\"><div>" << positions_html("A: position ids and slots", a, va, *fa, w.row0, std::min(w.row1, fa->mask.rows), rows)
       << kv_layout_html("A: KV layout the pass read", a, va, la.slot_to_node, w.col0, upto(la), slots) << "</div><div>"
       << positions_html("B: position ids and slots", b, vb, *fb, w.row0, std::min(w.row1, fb->mask.rows), rows)
       << kv_layout_html("B: KV layout the pass read", b, vb, lb.slot_to_node, w.col0, upto(lb), slots) << "</div></div>\n";
  }
  os << "<h2>Records of step " << step << " as recorded</h2><div class=\"side\"><div>" << raw_records_html("A", recs_a) << "</div><div>"
     << raw_records_html("B", recs_b) << "</div></div></section>\n";
  return os.str();
}

}  // namespace triescope::cli
