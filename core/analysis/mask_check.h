// Trace analysis (no Qt): every recorded mask row and position id checked
// against the rule it must obey. Tree layouts: a query reads exactly the
// slots of its ancestors-or-self in the layout its pass read
// (forward_layout) and its position id is its depth. The batch layout
// (batch_beam_search, no tree): b regions of `prompt + max_new_tokens` slots,
// a row at slot s of region r reads [r * cap, s] and its position is s - r * cap,
// where s follows from the step and the row (mask_check_copies).
// `triescope check`, `triescope inspect` and the Python bindings call it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/forward_layout.h"
#include "core/trace/trace_replay.h"

namespace triescope {

enum class MaskFault : uint8_t {
  missing_self,       // the query's own slot is not set
  missing_ancestor,   // an ancestor's slot is not set
  sees_sibling,       // a slot of a node with the query's parent is set
  sees_descendant,    // a slot of a node below the query is set
  sees_other_branch,  // a slot of any other non-ancestor is set
  sees_free_slot,     // a slot no node holds is set
  wrong_position,     // position id != depth (or the row's offset in its copy)
  wrong_slot,         // the pass says the query wrote a slot other than its node's
};
const char* mask_fault_name(MaskFault f);

struct MaskViolation {
  int32_t step = 0;
  std::string phase;
  std::string pass;            // "" (the target's forward), "draft_forward" or "draft_forwards[i]"
  int32_t row = 0;             // row of the pass
  int32_t query = kNoNode;     // its node (kNoNode in the batch layout)
  int32_t slot = kNoSlot;      // the column at fault (kNoSlot for position faults)
  int32_t slot_node = kNoNode; // the node in that slot, kNoNode when free or unknown
  MaskFault fault = MaskFault::missing_self;
  int64_t expected = 0, found = 0;  // bit (0/1), position id or slot
  std::string describe() const;     // one line: step, row, query, slot, expected vs found
};

// The violations of one forward pass of step view `v`, appended to `out`
// (at most `limit` in total); returns how many the pass has in all. `pass`
// names a draft model's pass ("" for the target's forward).
int64_t mask_check_tree(const StepView& v, const ForwardView& f, const ForwardLayout& layout, std::vector<MaskViolation>& out,
                        size_t limit, const std::string& pass = {});
// One row of that pass (the same rule and faults, for one cell's
// explanation: O(columns + depth)).
int64_t mask_check_tree_row(const StepView& v, const ForwardView& f, const ForwardLayout& layout, int32_t row,
                            std::vector<MaskViolation>& out, size_t limit, const std::string& pass = {});

// The batch layout's geometry: `region` slots per beam copy (prompt +
// max_new_tokens), `prompt` tokens each; read from the header's config.
struct CopyLayout {
  int32_t region = 0;
  int32_t prompt = 0;
};
// nullopt for a tree layout (any algorithm but batch_beam_search).
std::optional<CopyLayout> mask_copy_layout(const TraceReplay& t);
// Where row `row` of step `step`'s pass belongs in the batch layout: its
// copy (beam) and its position in that copy (its slot = copy * region + position).
struct CopyRow {
  int64_t copy = 0;
  int64_t position = 0;
};
CopyRow copy_row(int32_t step, int32_t row, int32_t prompt);

// The batch layout: `region` slots per beam copy, `prompt` tokens each. The
// slot and position a row must have follow from the step and the row
// (step 0: copy r / prompt, position r % prompt; step t: copy r, position
// prompt + t - 1), so a wrong slot and a wrong position are named apart.
int64_t mask_check_copies(const StepView& v, const ForwardView& f, int32_t region, int32_t prompt, std::vector<MaskViolation>& out,
                          size_t limit);
int64_t mask_check_copies_row(const StepView& v, const ForwardView& f, int32_t region, int32_t prompt, int32_t row,
                              std::vector<MaskViolation>& out, size_t limit);

struct MaskCheckReport {
  std::string layout;            // "tree" or "copies"
  int64_t passes = 0;            // forward passes checked (draft passes included)
  int64_t rows = 0;              // mask rows checked
  int64_t violation_count = 0;   // all of them
  std::vector<MaskViolation> violations;  // the first `limit`, by step
  // The summary's counters that disagree with the records, or its absence
  // (core/analysis/summary_check.h), one line each.
  std::vector<std::string> summary_problems;
  bool ok() const { return violation_count == 0 && summary_problems.empty(); }
};

// Every step's forward passes of a whole trace: the target's, and the draft
// model's (`draft_forward`, `draft_forwards`) in the same tree layout; and
// the summary's counters against the records (summary_check).
MaskCheckReport mask_check_trace(const TraceReplay& t, size_t limit = 20);

}  // namespace triescope
