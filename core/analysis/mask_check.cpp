#include "core/analysis/mask_check.h"
#include "core/analysis/summary_check.h"

#include <algorithm>
#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

const char* mask_fault_name(MaskFault f) {
  switch (f) {
    case MaskFault::missing_self: return "missing self bit";
    case MaskFault::missing_ancestor: return "missing ancestor bit";
    case MaskFault::sees_sibling: return "sees a sibling's slot";
    case MaskFault::sees_descendant: return "sees a descendant's slot";
    case MaskFault::sees_other_branch: return "sees another branch's slot";
    case MaskFault::sees_free_slot: return "sees a slot no node holds";
    case MaskFault::wrong_position: return "wrong position id";
    case MaskFault::wrong_slot: return "wrong slot written";
  }
  return "?";
}

std::string MaskViolation::describe() const {
  std::ostringstream os;
  os << "step " << step;
  if (!phase.empty()) os << " (" << phase << ")";
  if (!pass.empty()) os << ", " << pass;
  os << ", row " << row;
  if (query != kNoNode) os << ", query node " << query;
  if (slot != kNoSlot) {
    os << ", slot " << slot;
    if (slot_node != kNoNode) os << " (node " << slot_node << ")";
  }
  os << ": " << mask_fault_name(fault) << ": expected " << expected << ", found " << found;
  return os.str();
}

namespace {

bool mask_bit(const ForwardView& f, int32_t row, int32_t col) { return col < f.mask.cols && f.mask.test(row, col); }

struct Sink {
  const StepView& v;
  std::vector<MaskViolation>& out;
  size_t limit;
  std::string pass;
  int64_t count = 0;
  void add(int32_t row, int32_t query, int32_t slot, int32_t slot_node, MaskFault fault, int64_t expected, int64_t found) {
    ++count;
    if (out.size() < limit) out.push_back({v.step, v.phase, pass, row, query, slot, slot_node, fault, expected, found});
  }
};

// Why a set bit on `k`'s slot is wrong for query `q` (k is not an ancestor-or-self of q).
MaskFault stray_fault(const std::vector<TreeNode>& nodes, int32_t q, int32_t k) {
  if (nodes[static_cast<size_t>(k)].parent == nodes[static_cast<size_t>(q)].parent) return MaskFault::sees_sibling;
  for (int32_t a = nodes[static_cast<size_t>(k)].parent; a >= 0; a = nodes[static_cast<size_t>(a)].parent)
    if (a == q) return MaskFault::sees_descendant;
  return MaskFault::sees_other_branch;
}

// One row of a tree-layout pass; `anc` is scratch of v.nodes.size().
void check_tree_row(Sink& sink, const StepView& v, const ForwardView& f, const ForwardLayout& layout, int32_t r, std::vector<char>& anc) {
  const int32_t n = static_cast<int32_t>(v.nodes.size());
  const int32_t q = f.queries[static_cast<size_t>(r)];
  if (q < 0 || q >= n) return;  // TraceReplay refuses a query naming no node
  const TreeNode& qn = v.nodes[static_cast<size_t>(q)];
  if (static_cast<size_t>(r) < f.positions.size() && f.positions[static_cast<size_t>(r)] != qn.depth)
    sink.add(r, q, kNoSlot, kNoNode, MaskFault::wrong_position, qn.depth, f.positions[static_cast<size_t>(r)]);
  const int32_t own = layout.slot_of(q);
  if (static_cast<size_t>(r) < f.slots.size() && own != kNoSlot && f.slots[static_cast<size_t>(r)] != own)
    sink.add(r, q, f.slots[static_cast<size_t>(r)], kNoNode, MaskFault::wrong_slot, own, f.slots[static_cast<size_t>(r)]);
  std::fill(anc.begin(), anc.end(), 0);
  for (int32_t a = q; a >= 0 && a < n; a = v.nodes[static_cast<size_t>(a)].parent) anc[static_cast<size_t>(a)] = 1;
  // Every column of the row, then every ancestor slot past the row's width.
  const int32_t width = std::max<int32_t>(f.mask.cols, static_cast<int32_t>(layout.slot_to_node.size()));
  for (int32_t c = 0; c < width; ++c) {
    const int32_t k = layout.node_in_slot(c);
    const bool want = k >= 0 && k < n && anc[static_cast<size_t>(k)] != 0;
    const bool have = mask_bit(f, r, c);
    if (want == have) continue;
    if (want) sink.add(r, q, c, k, k == q ? MaskFault::missing_self : MaskFault::missing_ancestor, 1, 0);
    else if (k < 0 || k >= n) sink.add(r, q, c, kNoNode, MaskFault::sees_free_slot, 0, 1);
    else sink.add(r, q, c, k, stray_fault(v.nodes, q, k), 0, 1);
  }
}

// One row of a batch-layout pass.
void check_copies_row(Sink& sink, const StepView& v, const ForwardView& f, int32_t region, int32_t prompt, int32_t r) {
  const CopyRow where = copy_row(v.step, r, prompt);
  const int64_t copy = where.copy, pos = where.position;
  TS_CHECK(pos < region, "check: step " << v.step << " row " << r << " is at position " << pos << ", past the copy's " << region
                                        << " slots (config.prompt + config.beam.max_new_tokens): more steps than max_new_tokens");
  const int64_t first = copy * region, s = first + pos;
  if (static_cast<size_t>(r) < f.positions.size() && f.positions[static_cast<size_t>(r)] != pos)
    sink.add(r, kNoNode, kNoSlot, kNoNode, MaskFault::wrong_position, pos, f.positions[static_cast<size_t>(r)]);
  if (static_cast<size_t>(r) < f.slots.size() && f.slots[static_cast<size_t>(r)] != s)
    sink.add(r, kNoNode, f.slots[static_cast<size_t>(r)], kNoNode, MaskFault::wrong_slot, s, f.slots[static_cast<size_t>(r)]);
  // The row's columns, and the ones it needs past the mask's width (at most a copy's).
  const int32_t end = static_cast<int32_t>(std::max<int64_t>(f.mask.cols, std::min<int64_t>(s + 1, int64_t{f.mask.cols} + region)));
  for (int32_t c = 0; c < end; ++c) {
    const bool want = c >= first && c <= s;
    const bool have = mask_bit(f, r, c);
    if (want == have) continue;
    if (want) sink.add(r, kNoNode, c, kNoNode, c == s ? MaskFault::missing_self : MaskFault::missing_ancestor, 1, 0);
    else sink.add(r, kNoNode, c, kNoNode, c > s && c < first + region ? MaskFault::sees_free_slot : MaskFault::sees_other_branch, 0, 1);
  }
}

}  // namespace

int64_t mask_check_tree(const StepView& v, const ForwardView& f, const ForwardLayout& layout, std::vector<MaskViolation>& out,
                        size_t limit, const std::string& pass) {
  Sink sink{v, out, limit, pass};
  std::vector<char> anc(v.nodes.size(), 0);
  for (int32_t r = 0; r < f.mask.rows && static_cast<size_t>(r) < f.queries.size(); ++r) check_tree_row(sink, v, f, layout, r, anc);
  return sink.count;
}

int64_t mask_check_tree_row(const StepView& v, const ForwardView& f, const ForwardLayout& layout, int32_t row,
                            std::vector<MaskViolation>& out, size_t limit, const std::string& pass) {
  Sink sink{v, out, limit, pass};
  std::vector<char> anc(v.nodes.size(), 0);
  if (row >= 0 && row < f.mask.rows && static_cast<size_t>(row) < f.queries.size()) check_tree_row(sink, v, f, layout, row, anc);
  return sink.count;
}

CopyRow copy_row(int32_t step, int32_t row, int32_t prompt) {
  // Where row r belongs, from the step alone (batch_beam_search.cpp): the
  // prefill feeds each copy's prompt in turn, step t one token per copy at
  // position prompt + t - 1. Slot and position are then judged apart.
  if (step == 0) return {row / prompt, row % prompt};
  return {row, int64_t{prompt} + step - 1};
}

int64_t mask_check_copies(const StepView& v, const ForwardView& f, int32_t region, int32_t prompt, std::vector<MaskViolation>& out,
                          size_t limit) {
  Sink sink{v, out, limit, {}};
  for (int32_t r = 0; r < f.mask.rows; ++r) check_copies_row(sink, v, f, region, prompt, r);
  return sink.count;
}

int64_t mask_check_copies_row(const StepView& v, const ForwardView& f, int32_t region, int32_t prompt, int32_t row,
                              std::vector<MaskViolation>& out, size_t limit) {
  Sink sink{v, out, limit, {}};
  if (row >= 0 && row < f.mask.rows) check_copies_row(sink, v, f, region, prompt, row);
  return sink.count;
}

std::optional<CopyLayout> mask_copy_layout(const TraceReplay& t) {
  const HeaderRecord& h = t.header_record();
  if (h.algorithm != "batch_beam_search") return std::nullopt;
  // The copy size, from the header's config: every field with its type
  // and range, the sum in 64 bits (a copy no trace's slots can hold is refused).
  JsonObjectReader cfg = h.config_reader(t.origin());
  const json& prompt_ids = cfg.raw("prompt");
  TS_CHECK(prompt_ids.is_array(), cfg.where("prompt") << " must be an array of token ids, got " << json_brief(prompt_ids));
  // The batch layout places copy r / prompt at step 0 (copy_row).
  TS_CHECK(!prompt_ids.empty(), cfg.where("prompt") << " must hold at least one token (the copy's prompt)");
  const int64_t max_new = cfg.object("beam").get_int("max_new_tokens", 0, kTraceMaxSlots);
  const int64_t copy = static_cast<int64_t>(prompt_ids.size()) + max_new;
  TS_CHECK(copy > 0 && copy <= kTraceMaxSlots, cfg.where("prompt") << " (" << prompt_ids.size() << " tokens) + config.beam.max_new_tokens ("
                                                                    << max_new << ") = " << copy
                                                                    << " slots per copy, must be in [1, " << kTraceMaxSlots << "]");
  return CopyLayout{static_cast<int32_t>(copy), static_cast<int32_t>(prompt_ids.size())};
}

MaskCheckReport mask_check_trace(const TraceReplay& t, size_t limit) {
  MaskCheckReport rep;
  const std::optional<CopyLayout> layout_copies = mask_copy_layout(t);
  const bool copies = layout_copies.has_value();
  rep.layout = copies ? "copies" : "tree";
  const int32_t region = copies ? layout_copies->region : 0, prompt = copies ? layout_copies->prompt : 0;
  StepView v;
  ForwardView draft;
  RecordedTotals counted;
  bool first = true;
  for (int32_t step : t.steps()) {
    v = first ? t.at(step) : t.advance(v, step);  // stepping forward replays only the records in between
    first = false;
    recorded_totals_add_step(v, counted);
    if (copies) {
      if (!v.forward) continue;
      for (size_t r = 0; r < v.forward->slots.size(); ++r)
        TS_CHECK(v.forward->slots[r] >= 0 && v.forward->slots[r] < kTraceMaxSlots,
                 t.origin() << ": step " << step << ": forward.slots[" << r << "] = " << v.forward->slots[r] << " must be in [0, "
                            << kTraceMaxSlots << ")");
      ++rep.passes;
      rep.rows += v.forward->mask.rows;
      rep.violation_count += mask_check_copies(v, *v.forward, region, prompt, rep.violations, limit);
      continue;
    }
    const bool has_drafts = v.extra.is_object() && (v.extra.contains(kDraftForwardField) || v.extra.contains(kDraftForwardsField));
    if (!v.forward && !has_drafts) continue;
    const ForwardLayout layout = forward_layout(v, t.gc_after_forward(step));
    auto check = [&](const ForwardView& f, const std::string& pass) {
      ++rep.passes;
      rep.rows += f.mask.rows;
      rep.violation_count += mask_check_tree(v, f, layout, rep.violations, limit, pass);
    };
    if (v.forward) check(*v.forward, "");
    if (!has_drafts) continue;
    // A draft pass ran before the step's later nodes existed: its mask is
    // narrower, and every node it reads is already in the step's layout.
    const std::string where = t.origin() + ": step " + std::to_string(step) + ": ";
    if (v.extra.contains(kDraftForwardField)) {
      forward_view_parse(v.extra[kDraftForwardField], where + kDraftForwardField, draft);
      check(draft, kDraftForwardField);
    }
    if (v.extra.contains(kDraftForwardsField)) {
      const nlohmann::json& passes = v.extra[kDraftForwardsField];
      TS_CHECK(passes.is_array(), where << kDraftForwardsField << " must be an array, got " << json_brief(passes));
      for (size_t i = 0; i < passes.size(); ++i) {
        const std::string name = std::string(kDraftForwardsField) + "[" + std::to_string(i) + "]";
        forward_view_parse(passes[i], where + name, draft);
        check(draft, name);
      }
    }
  }
  t.parse_unreplayed_records();  // a streamed trace: every record read once, none unparsed
  rep.summary_problems = summary_check(t, counted);
  return rep;
}

}  // namespace triescope
