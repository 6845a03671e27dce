// Trace analysis (no Qt): why one cell of a recorded attention mask is set
// or not, in the tree's words. The rule (docs/architecture.md): a token attends
// to exactly its ancestors and itself, and its position id is its depth.
// The explanation names the relation of the key slot's node to the query
// node (itself, parent, k-th ancestor, prompt, descendant, another branch
// with the common ancestor, free slot), the recorded bit, and whether the
// cell breaks the rule; that verdict is mask_check's (the one check `triescope
// check` runs), never a second copy of the rule. Batch-layout traces (one
// cache region per beam) are explained the same way in copies: each row's
// beam copy and the copy of the token it reads.
// The GUI's mask pane explains the hovered or clicked cell with it; the cost
// is one row's check, O(columns + depth), so a 4096 x 4096 mask stays cheap.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/forward_layout.h"
#include "core/analysis/mask_check.h"
#include "core/trace/trace_replay.h"

namespace triescope {

enum class CellRelation : uint8_t {
  self,           // the query's own slot
  parent,         // one generation up
  ancestor,       // `generations` >= 2 up
  prompt,         // an ancestor that is a prompt token (depth < prompt length)
  descendant,     // below the query (written by this pass or later)
  other_branch,   // neither: `common_ancestor` names where the branches part (kNoNode: another tree)
  free_slot,      // no node in the slot (in the layout the pass read)
  not_written,    // batch layout: the row's own copy past its position
  other_copy,     // batch layout: another beam's copy
  unknown_query,  // the row names no node of the tree
};
const char* cell_relation_name(CellRelation r);
// The relations the rule lets a query read: itself and its ancestors.
bool cell_relation_attends(CellRelation r);

struct MaskCellExplanation {
  int32_t row = -1, col = -1;
  CellRelation relation = CellRelation::unknown_query;
  bool bit = false;                // the recorded mask bit
  bool agrees = true;              // mask_check finds no fault on this cell
  int32_t generations = 0;         // self 0, parent 1, ...; descendant: generations down
  // Tree layout (kNoNode in the batch layout).
  int32_t query = kNoNode, key = kNoNode;
  int32_t common_ancestor = kNoNode;  // other_branch
  bool sibling = false;               // other_branch with the query's parent as common ancestor
  std::vector<int32_t> path;          // nodes from the query to the key: up to the key or the common ancestor, then down
  // Both layouts.
  int32_t query_position = -1;     // the position id recorded for the row
  int32_t query_slot = kNoSlot;    // the slot the row writes (recorded)
  int32_t key_position = -1;       // the key's depth (tree) or its offset in its copy (batch), -1 for a free slot
  int32_t key_writer_row = -1;     // the row of this pass that writes the key slot, -1 if an earlier pass did
  bool collected_after_pass = false;  // free_slot: the step's gc after its pass collected the node it held
  // Batch layout: beam copies.
  int32_t query_copy = -1, key_copy = -1;
  int32_t query_copy_position = -1;  // where the layout puts the row in its copy (copy_row), whatever it recorded
  std::vector<MaskViolation> cell_faults;  // mask_check's faults on this cell
  std::vector<MaskViolation> row_faults;   // on the row itself: wrong position id, wrong slot written
  std::string check_error;                 // the check refused the row (its message)
  std::string sentence;                    // plain words, e.g. "query 'was' (node 7, position 5) reads slot 4 'there' (node 4, position 4): its parent"
  std::string fault_text;                  // the faults in the check's words, "" when none
};

// What a step's cells are explained against. Cheap to fill per step (no
// pass over the mask); explain() reads one row of it.
struct MaskCellSource {
  const StepView* view = nullptr;
  const ForwardView* pass = nullptr;       // the pass explained (normally view->forward)
  const ForwardLayout* layout = nullptr;   // tree layout: what each column held (forward_layout); unused for copies
  std::optional<CopyLayout> copies;        // set: the batch layout (mask_copy_layout)
  const std::vector<std::vector<int32_t>>* copy_tokens = nullptr;  // [copies][positions] batch_copy_tokens, when known
  int32_t prompt_len = 0;                  // config.prompt's length (prompt relation), 0 if unknown
  std::function<std::string(int32_t token)> token_text;  // a token as the panes show it (token_display)
};

MaskCellExplanation mask_cell_explain(const MaskCellSource& s, int32_t row, int32_t col);

// A token's vocabulary string escaped the way the GUI's panes show it
// (space as U+2423, "\n", "\t"), cut to `max_chars` code points with an ellipsis.
std::string token_display(const TraceReplay& t, int32_t token, size_t max_chars = 24);
// config.prompt's length from the header, 0 when it has none.
int32_t trace_prompt_length(const TraceReplay& t);

}  // namespace triescope
