#include <iomanip>
#include <iostream>

#include "app/commands.h"
#include "core/analysis/forward_layout.h"
#include "core/analysis/mask_check.h"
#include "core/common/error.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"

namespace triescope::cli {

namespace {
// Slot lists as ranges ("0-4 7"): a declared slot count never sets the output's size.
std::string slot_ranges(const std::vector<char>& in_list) {
  std::string out;
  for (size_t s = 0; s < in_list.size(); ++s) {
    if (!in_list[s]) continue;
    size_t e = s;
    while (e + 1 < in_list.size() && in_list[e + 1]) ++e;
    out += " " + std::to_string(s) + (e > s ? "-" + std::to_string(e) : std::string());
    s = e;
  }
  return out.empty() ? " none" : out;
}

void print_layout(const TraceReplay& t, const StepView& v, const std::vector<int32_t>& slot_to_node, const char* title) {
  std::cout << "\n" << title << " (slot: token):";
  // Up to the last held slot; the free tail is one line, however long kv.slots says it is.
  size_t shown = slot_to_node.size();
  while (shown > 0 && slot_to_node[shown - 1] < 0) --shown;
  for (size_t s = 0; s < shown; ++s) {
    if (s % 8 == 0) std::cout << "\n ";
    const int32_t id = slot_to_node[s];
    std::cout << " " << std::setw(3) << s << ":" << std::left << std::setw(10)
              << (id < 0 || static_cast<size_t>(id) >= v.nodes.size() ? std::string("(free)") : t.token_text(v.nodes[static_cast<size_t>(id)].token))
              << std::right;
  }
  if (shown < slot_to_node.size()) std::cout << "\n  slots " << shown << "-" << slot_to_node.size() - 1 << ": (free)";
  std::cout << "\n";
}

void print_subtree(const TraceReplay& t, const StepView& v, const std::vector<std::vector<int32_t>>& children, int32_t id,
                   int depth) {
  const TreeNode& n = v.nodes[static_cast<size_t>(id)];
  bool added = std::find(v.added.begin(), v.added.end(), id) != v.added.end();
  std::cout << std::string(static_cast<size_t>(depth) * 2, ' ') << (added ? "+ " : "- ") << t.token_text(n.token)
            << "  [node " << n.id << ", pos " << n.depth << ", slot " << (n.slot < 0 ? std::string("-") : std::to_string(n.slot))
            << ", " << node_status_name(n.status) << ", logp " << std::fixed << std::setprecision(3) << n.logprob << "]\n";
  for (int32_t c : children[static_cast<size_t>(id)]) print_subtree(t, v, children, c, depth + 1);
}
}  // namespace

int cmd_inspect(const Args& args) {
  auto p = parse_args(args, {"step"}, {});
  TS_CHECK(p.positional.size() == 1, "inspect: expected one trace file");
  std::string warning;
  TraceReplay t(trace_read(p.positional[0], &warning), p.positional[0]);
  if (!warning.empty()) std::cerr << "triescope inspect: warning: " << warning << "\n";
  int32_t step = t.last_step();
  if (p.has("step")) {
    try {
      step = std::stoi(p.get("step"));
    } catch (const std::exception&) {
      TS_FAIL("inspect: --step must be an integer, got '" << p.get("step") << "'");
    }
    TS_CHECK(step >= 0 && step <= t.last_step(), "inspect: --step " << step << " outside [0, " << t.last_step() << "]");
  }
  const StepView v = t.at(step);
  const ForwardLayout layout = forward_layout(v, trace_gc_after_forward_steps(t.records()).count(step) > 0);
  std::cout << p.positional[0] << ": " << t.header().value("algorithm", "?") << " on " << t.header().value("backend", "?")
            << ", step " << step << " of " << t.last_step() << (v.phase.empty() ? "" : " (" + v.phase + ")") << "\n";

  std::vector<std::vector<int32_t>> children(v.nodes.size());
  std::vector<int32_t> roots;
  for (const auto& n : v.nodes) {
    if (n.parent == kNoNode) roots.push_back(n.id);
    else children[static_cast<size_t>(n.parent)].push_back(n.id);
  }
  if (!v.nodes.empty()) {
    std::cout << "\ntree (+ added at this step):\n";
    for (int32_t r : roots) print_subtree(t, v, children, r, 1);
  }
  if (!v.gc_moves.empty()) {
    std::cout << "\ngarbage collection: " << v.gc_slots_before << " -> " << v.gc_moves.size() << " slots";
    std::vector<char> freed(static_cast<size_t>(std::max(0, v.gc_slots_before)), 1);
    std::string moved;
    for (auto& [o, n] : v.gc_moves) {
      if (o >= 0 && static_cast<size_t>(o) < freed.size()) freed[static_cast<size_t>(o)] = 0;
      if (o != n) moved += " " + std::to_string(o) + "->" + std::to_string(n);
    }
    std::cout << "; freed slots:" << slot_ranges(freed);
    std::cout << "; moved:" << (moved.empty() ? std::string(" none") : moved) << "\n";
  }
  if (v.forward) {
    const auto& f = *v.forward;
    std::cout << "\nattention mask of the forward pass (rows = queries, cols = KV slots, # = may attend):\n";
    std::cout << std::setw(14) << "" << " ";
    for (int32_t c = 0; c < f.mask.cols; ++c) std::cout << (c % 10 == 0 ? char('0' + (c / 10) % 10) : ' ');
    std::cout << "\n" << std::setw(14) << "" << " ";
    for (int32_t c = 0; c < f.mask.cols; ++c) std::cout << char('0' + c % 10);
    std::cout << "\n";
    for (int32_t r = 0; r < f.mask.rows; ++r) {
      std::string label = f.queries.empty() ? "row " + std::to_string(r)
                                            : t.token_text(v.nodes.at(static_cast<size_t>(f.queries[static_cast<size_t>(r)])).token);
      if (label.size() > 10) label = label.substr(0, 10);
      std::cout << std::setw(10) << label << " p" << std::setw(2) << f.positions[static_cast<size_t>(r)] << " ";
      for (int32_t c = 0; c < f.mask.cols; ++c) std::cout << (f.mask.test(r, c) ? '#' : '.');
      std::cout << "\n";
    }
    std::cout << "position ids:";
    for (int32_t x : f.positions) std::cout << " " << x;
    std::cout << "\n";
    if (!f.queries.empty() && !v.nodes.empty()) {
      std::vector<MaskViolation> faults;
      const int64_t bad = mask_check_tree(v, f, layout, faults, 1);
      std::cout << "mask rows and position ids against their query's ancestors in the layout the pass read: "
                << (bad == 0 ? std::string("all agree") : std::to_string(bad) + " violations, the first: " + faults.front().describe() +
                                                          " (triescope check lists them)")
                << "\n";
    }
  }
  if (layout.before_gc && !v.nodes.empty())  // a v1 lookahead trace: the gc ran after the pass
    print_layout(t, v, layout.slot_to_node, "KV layout the forward pass read, before this step's gc");
  if (!v.slot_to_node.empty() && !v.nodes.empty()) print_layout(t, v, v.slot_to_node, layout.before_gc ? "KV layout after the gc" : "KV layout");
  if (!v.kv.empty()) {
    std::cout << "\nKV slots " << v.kv.value("slots", 0) << " (peak " << v.kv.value("peak", 0) << ")";
    if (v.kv.contains("batch_slots")) std::cout << ", batch layout " << v.kv.value("batch_slots", 0);
    std::cout << "\n";
  }
  return 0;
}

}  // namespace triescope::cli
