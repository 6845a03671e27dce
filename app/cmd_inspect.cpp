#include <algorithm>
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

// Output bounds: what a terminal can use, whatever the trace's size.
constexpr size_t kTreeLinesMax = 2000;  // tree lines printed
constexpr size_t kChainShown = 4;       // of a long single-child chain, the first and last shown
constexpr size_t kIndentMax = 40;       // levels of indentation (the line says the position anyway)
constexpr int32_t kMaskRowsMax = 64, kMaskColsMax = 256;
constexpr size_t kLayoutSlotsMax = 512;

void print_layout(const TraceReplay& t, const StepView& v, const std::vector<int32_t>& slot_to_node, const char* title) {
  std::cout << "\n" << title << " (slot: token):";
  // Up to the last held slot; the free tail is one line, however long kv.slots says it is.
  size_t held = slot_to_node.size();
  while (held > 0 && slot_to_node[held - 1] < 0) --held;
  const size_t shown = std::min(held, kLayoutSlotsMax);
  for (size_t s = 0; s < shown; ++s) {
    if (s % 8 == 0) std::cout << "\n ";
    const int32_t id = slot_to_node[s];
    std::cout << " " << std::setw(3) << s << ":" << std::left << std::setw(10)
              << (id < 0 || static_cast<size_t>(id) >= v.nodes.size() ? std::string("(free)") : t.token_text(v.nodes[static_cast<size_t>(id)].token))
              << std::right;
  }
  if (shown < held) std::cout << "\n  slots " << shown << "-" << held - 1 << ": not shown (" << held - shown << " slots)";
  if (held < slot_to_node.size()) std::cout << "\n  slots " << held << "-" << slot_to_node.size() - 1 << ": (free)";
  std::cout << "\n";
}

void print_node(const TraceReplay& t, const TreeNode& n, bool added, size_t level) {
  std::cout << std::string(std::min(level, kIndentMax) * 2, ' ') << (level > kIndentMax ? ">" : "") << (added ? "+ " : "- ")
            << t.token_text(n.token) << "  [node " << n.id << ", pos " << n.depth << ", slot "
            << (n.slot < 0 ? std::string("-") : std::to_string(n.slot)) << ", " << node_status_name(n.status) << ", logp " << std::fixed
            << std::setprecision(3) << n.logprob << "]\n";
}

// The tree, depth first, without recursion (a 50,000-node chain is 50,000
// levels): a run of single-child nodes longer than 2 * kChainShown shows its
// first and last kChainShown nodes and says how many it elides; at most
// kTreeLinesMax lines in all, and the rest counted.
void print_tree(const TraceReplay& t, const StepView& v) {
  std::vector<std::vector<int32_t>> children(v.nodes.size());
  std::vector<char> added(v.nodes.size(), 0);
  for (int32_t id : v.added)
    if (id >= 0 && static_cast<size_t>(id) < added.size()) added[static_cast<size_t>(id)] = 1;
  std::vector<std::pair<int32_t, size_t>> stack;  // (node, level), the next to print on top
  for (const auto& n : v.nodes) {
    if (n.parent == kNoNode) stack.emplace_back(n.id, 1);
    else children[static_cast<size_t>(n.parent)].push_back(n.id);
  }
  std::reverse(stack.begin(), stack.end());
  size_t lines = 0, printed = 0, elided = 0;
  auto show = [&](int32_t id, size_t level) {
    print_node(t, v.nodes[static_cast<size_t>(id)], added[static_cast<size_t>(id)] != 0, level);
    ++lines;
    ++printed;
  };
  while (!stack.empty() && lines < kTreeLinesMax) {
    const auto [id, level] = stack.back();
    stack.pop_back();
    show(id, level);
    const auto& kids = children[static_cast<size_t>(id)];
    if (kids.size() != 1) {
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.emplace_back(*it, level + 1);
      continue;
    }
    // A chain below `id`: every node in it has one child, but the last.
    std::vector<int32_t> chain;
    for (int32_t c = kids[0];; c = children[static_cast<size_t>(c)][0]) {
      chain.push_back(c);
      if (children[static_cast<size_t>(c)].size() != 1) break;
    }
    size_t lv = level + 1;
    if (chain.size() <= 2 * kChainShown) {
      stack.emplace_back(chain.front(), lv);  // short: printed as any subtree
      continue;
    }
    for (size_t k = 0; k < kChainShown && lines < kTreeLinesMax; ++k) show(chain[k], lv++);
    const TreeNode& a = v.nodes[static_cast<size_t>(chain[kChainShown])];
    const TreeNode& b = v.nodes[static_cast<size_t>(chain[chain.size() - kChainShown - 1])];
    const size_t cut = chain.size() - 2 * kChainShown;
    std::cout << std::string(std::min(lv, kIndentMax) * 2, ' ') << "... " << cut << " nodes of a single chain elided (nodes " << a.id
              << " to " << b.id << ", pos " << a.depth << " to " << b.depth << ") ...\n";
    ++lines;
    elided += cut;
    ++lv;
    for (size_t k = chain.size() - kChainShown; k + 1 < chain.size() && lines < kTreeLinesMax; ++k) show(chain[k], lv++);
    stack.emplace_back(chain.back(), lv);
  }
  if (printed + elided < v.nodes.size())
    std::cout << "  ... " << v.nodes.size() - printed - elided << " more nodes not shown (" << kTreeLinesMax
              << " lines at most; the tree has " << v.nodes.size() << " nodes)\n";
}
}  // namespace

int cmd_inspect(const Args& args) {
  auto p = parse_args(args, {"step"}, {});
  TS_CHECK(p.positional.size() == 1, "inspect: expected one trace file");
  std::string warning;
  // Streamed: only the keyframe and records step N needs are parsed.
  const TraceReplay t = TraceReplay::open(p.positional[0], &warning);
  if (!warning.empty()) std::cerr << "triescope inspect: warning: " << warning << "\n";
  const int32_t step = static_cast<int32_t>(p.get_int("step", 0, t.last_step(), t.last_step()));
  const StepView v = t.at(step);
  const ForwardLayout layout = forward_layout(v, t.gc_after_forward(step));
  const HeaderRecord& h = t.header_record();
  std::cout << p.positional[0] << ": " << h.algorithm << " on " << (h.backend.empty() ? "?" : h.backend)
            << ", step " << step << " of " << t.last_step() << (v.phase.empty() ? "" : " (" + v.phase + ")") << "\n";

  if (!v.nodes.empty()) {
    std::cout << "\ntree (+ added at this step):\n";
    print_tree(t, v);
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
    const int32_t rows = std::min(f.mask.rows, kMaskRowsMax), cols = std::min(f.mask.cols, kMaskColsMax);
    std::cout << std::setw(14) << "" << " ";
    for (int32_t c = 0; c < cols; ++c) std::cout << (c % 10 == 0 ? char('0' + (c / 10) % 10) : ' ');
    std::cout << "\n" << std::setw(14) << "" << " ";
    for (int32_t c = 0; c < cols; ++c) std::cout << char('0' + c % 10);
    std::cout << "\n";
    for (int32_t r = 0; r < rows; ++r) {
      std::string label = f.queries.empty() ? "row " + std::to_string(r)
                                            : t.token_text(v.nodes.at(static_cast<size_t>(f.queries[static_cast<size_t>(r)])).token);
      if (label.size() > 10) label = label.substr(0, 10);
      std::cout << std::setw(10) << label << " p" << std::setw(2) << f.positions[static_cast<size_t>(r)] << " ";
      for (int32_t c = 0; c < cols; ++c) std::cout << (f.mask.test(r, c) ? '#' : '.');
      std::cout << (cols < f.mask.cols ? " ..." : "") << "\n";
    }
    if (rows < f.mask.rows || cols < f.mask.cols)
      std::cout << "(" << f.mask.rows << " x " << f.mask.cols << " mask: the first " << rows << " rows and " << cols << " columns shown)\n";
    std::cout << "position ids:";
    for (size_t i = 0; i < f.positions.size() && i < static_cast<size_t>(kMaskColsMax); ++i) std::cout << " " << f.positions[i];
    if (f.positions.size() > static_cast<size_t>(kMaskColsMax)) std::cout << " ... (" << f.positions.size() << " in all)";
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
  if (const std::optional<KvRecord>& kv = v.kv) {
    std::cout << "\nKV slots " << kv->slots << " (peak " << kv->peak << ")";
    if (kv->batch_slots) std::cout << ", batch layout " << *kv->batch_slots;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace triescope::cli
