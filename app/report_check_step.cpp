#include "app/report_check_step.h"

#include <map>
#include <set>
#include <sstream>

#include "app/report_escape.h"
#include "app/report_mask_grid.h"
#include "app/report_step_parts.h"
#include "app/report_tree_svg.h"
#include "core/analysis/forward_layout.h"

namespace triescope::cli {

namespace {
constexpr size_t kPassFaultsMax = 100000;  // cells marked per pass; a pass can be millions of cells
constexpr size_t kTreesPerPass = 3;

std::string layout_rule_title(const TraceReplay& t) {
  return mask_copy_layout(t) ? "the copy layout's mask" : "the ancestor rule's mask";
}

bool is_cell_fault(MaskFault f) { return f != MaskFault::wrong_position && f != MaskFault::wrong_slot; }

// The pass a violation names, from the step view (forward) or its record's extra fields (draft passes).
ForwardView pass_view(const TraceReplay& t, const StepView& v, const std::string& pass) {
  if (pass.empty()) return *v.forward;
  ForwardView f;
  const std::string where = t.origin() + ": step " + std::to_string(v.step) + ": " + pass;
  const std::string passes = std::string(kDraftForwardsField) + "[";
  if (pass == kDraftForwardField) forward_view_parse(v.extra[kDraftForwardField], where, f);
  else forward_view_parse(v.extra[kDraftForwardsField][std::stoul(pass.substr(passes.size()))], where, f);
  return f;
}

std::string pass_html(const TraceReplay& t, const StepView& v, const ForwardLayout& layout, const std::string& pass,
                      const std::vector<const MaskViolation*>& listed) {
  const ForwardView f = pass_view(t, v, pass);
  std::vector<MaskViolation> all;  // every fault of the pass, as check finds them
  if (const auto copies = mask_copy_layout(t)) mask_check_copies(v, f, copies->region, copies->prompt, all, kPassFaultsMax);
  else mask_check_tree(v, f, layout, all, kPassFaultsMax, pass);
  std::set<std::pair<int32_t, int32_t>> wrong;
  std::set<int32_t> wrong_rows, focus_rows, marked_slots;
  for (const MaskViolation& m : all) {
    if (is_cell_fault(m.fault)) wrong.emplace(m.row, m.slot);
    else wrong_rows.insert(m.row);
  }
  for (const MaskViolation* m : listed) {
    focus_rows.insert(m->row);
    if (m->slot != kNoSlot) marked_slots.insert(m->slot);
  }
  const int32_t width = std::max<int32_t>(f.mask.cols, static_cast<int32_t>(layout.slot_to_node.size()));
  const GridWindow w = grid_window(f.mask.rows, width, listed.front()->row, listed.front()->slot);
  std::ostringstream os;
  os << "<h3>Pass " << markup_escape(pass.empty() ? std::string("forward") : pass) << "</h3>\n";
  std::set<int32_t> trees;
  std::ostringstream tree_html;
  for (const MaskViolation* m : listed) {
    if (m->query == kNoNode || trees.size() >= kTreesPerPass || !trees.insert(m->query).second) continue;
    std::set<int32_t> slot_nodes;
    for (const MaskViolation* o : listed)
      if (o->query == m->query && o->slot_node != kNoNode) slot_nodes.insert(o->slot_node);
    tree_html << "<div><h3>Tree around " << markup_escape(node_text(t, v.nodes, m->query)) << "</h3>\n"
              << tree_around_svg(t, v, m->query, slot_nodes) << "</div>\n";
  }
  auto label = [&](int32_t r) {
    std::string s = std::to_string(r) + ": ";
    if (static_cast<size_t>(r) < f.queries.size()) s += node_text(t, v.nodes, f.queries[static_cast<size_t>(r)]) + " ";
    if (static_cast<size_t>(r) < f.positions.size()) s += "p" + std::to_string(f.positions[static_cast<size_t>(r)]);
    return s;
  };
  auto recorded = [&](int32_t r, int32_t c) { return c < f.mask.cols ? int(f.mask.test(r, c)) : -1; };
  auto is_wrong = [&](int32_t r, int32_t c) { return wrong.count({r, c}) > 0; };
  MaskGridSpec g{"recorded mask", f.mask.rows, width, w, label, recorded, is_wrong, "wrong", focus_rows};
  MaskGridSpec rule = g;
  rule.title = layout_rule_title(t);
  rule.bit = [&](int32_t r, int32_t c) {
    const int b = recorded(r, c);
    return is_wrong(r, c) ? (b == 1 ? 0 : 1) : b;
  };
  // Side by side, as the inspector's panes: the mask as recorded, the mask the rule asks for, the tree.
  os << "<div class=\"side\">" << mask_grid_html(g) << mask_grid_html(rule) << tree_html.str() << "</div>\n";
  os << "<div class=\"legend\">cells:<span style=\"background:#2154aa\"></span>attends<span style=\"background:#f0f0f3\"></span>masked"
        "<span style=\"background:#d71414\"></span>at fault, set<span style=\"background:#ffb3b3\"></span>at fault, clear</div>\n";
  os << positions_html("position ids and slots of the pass", t, v, f, w.row0, w.row1, wrong_rows.empty() ? focus_rows : wrong_rows);
  if (!v.nodes.empty())
    os << kv_layout_html(layout.before_gc ? "KV layout the pass read (before this step's gc)" : "KV layout the pass read", t, v,
                         layout.slot_to_node, w.col0, std::min<int32_t>(w.col1, static_cast<int32_t>(layout.slot_to_node.size())),
                         marked_slots);
  return os.str();
}
}  // namespace

std::string check_step_html(const TraceReplay& t, int32_t step, const std::vector<const MaskViolation*>& listed) {
  const StepView v = t.at(step);
  const ForwardLayout layout = forward_layout(v, t.gc_after_forward(step));
  std::map<std::string, std::vector<const MaskViolation*>> by_pass;
  for (const MaskViolation* m : listed) by_pass[m->pass].push_back(m);
  std::ostringstream os;
  os << "<section id=\"step-" << step << "\"><h2>Step " << step << (v.phase.empty() ? "" : " (" + markup_escape(v.phase) + ")") << ": "
     << listed.size() << " violation" << (listed.size() == 1 ? "" : "s") << " listed</h2>\n";
  for (const auto& [pass, vs] : by_pass) os << pass_html(t, v, layout, pass, vs);
  os << raw_records_html("records of step " + std::to_string(step) + " as recorded", t.records_of_step(step));
  os << "</section>\n";
  return os.str();
}

}  // namespace triescope::cli
