// What a constrained (STATIC) step means, as the paper's Figure 1 draws it:
// each beam's state on the prefix tree of the set, the CSR row of that state
// (Fig. 1d-e: P[s], P[s + 1], the column tokens and next states), the dense
// bit row at levels < d (App. A.1.2), and the tokens kept from each beam.
// Built from the step record's `constraint` entries and chosen beams, plus,
// when the set was found (constraint_source.h), the index the decoder used.
// Only the neighbourhood of the beams is taken from the index, never the
// whole matrix. Without the index it says only what the records say.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/constraint_source.h"
#include "core/trace/trace_replay.h"

namespace triescope {

struct ConstraintPictureOptions {
  int32_t max_row_entries = 64;       // CSR row entries listed per beam (the rest counted)
  int32_t max_children_drawn = 3;     // children of a beam's state drawn on the tree (the rest counted)
  int64_t whole_tree_states = 64;     // sets with at most this many states are drawn whole
};

// One (column token, next state) pair of a CSR row, with the ids below it.
struct ConstraintRowEntry {
  int32_t token = -1;
  int64_t next = -1;
  int64_t items = -1;
};

struct ConstraintBeam {
  int32_t beam = -1;            // as the record (masked) or the chosen entry (after) numbers it
  int32_t node = -1;            // trie node of the beam's last token, -1 when not known
  int32_t level = -1;           // tokens taken under the constraint, -1 when not known
  std::vector<int32_t> prefix;  // those tokens, first first (empty when not known)
  int64_t state = -1;           // index state (or the recorded one without an index); -1 unknown / dead

  // The record (masked beams only).
  bool recorded = false;
  int64_t recorded_state = -1;
  std::string path;             // dense | sparse | pointer | search | hash
  int32_t valid = -1;
  int64_t recorded_row_begin = -1, recorded_row_end = -1;
  int32_t slice = -1;           // B_t

  // From the index.
  bool indexed = false;
  int64_t row_begin = -1, row_end = -1;   // P[s], P[s + 1]
  std::vector<ConstraintRowEntry> row;    // the row's first max_row_entries entries
  int64_t items = -1;                     // ids of C below the state
  bool dense = false;                     // level < d: the decoder read a bit row of D
  std::vector<uint64_t> dense_bits;       // [words_per_row] that row, LSB first

  // Kept from this beam at this step (chosen entries with from_beam = beam): token, score.
  std::vector<std::pair<int32_t, double>> kept;
  std::string problem;  // the record disagrees with the index (names step, field)
};

// A node of the drawn prefix tree: the set's trie near the beams.
struct ConstraintTreeNode {
  int32_t parent = -1;          // index into ConstraintPicture::tree, -1 for the root
  int32_t token = -1;           // token into this node (-1 at the root)
  int32_t level = 0;
  int64_t state = -1;           // -1 when not known (records only)
  int64_t items = -1;           // ids below, -1 when not known
  int64_t hidden_children = 0;  // children in the set not drawn
  std::vector<int32_t> masked_beams;  // beams in this state when the step masked them
  std::vector<int32_t> after_beams;   // beams in this state after the step
};

struct ConstraintPicture {
  int32_t step = 0;
  bool has_record = false;     // the step record carries `constraint`
  bool indexed = false;        // the set was found and checked
  bool whole_tree = false;     // every state of the set is drawn
  int32_t length = 0, vocab_size = 0, dense_levels = 0, words_per_row = 0;
  std::vector<ConstraintBeam> masked;  // the beams the step masked (the record)
  std::vector<ConstraintBeam> after;   // the beams after the step (the chosen entries)
  std::vector<ConstraintTreeNode> tree;  // parents before children
  std::vector<std::string> problems;     // malformed fields, record vs index
};

// The picture of `v`. `replay` gives the previous step's record (the nodes of
// beams that kept no token); `index` may be null (records only).
ConstraintPicture constraint_picture_at(const StepView& v, const TraceReplay& replay, const ConstraintHeader& header,
                                        const ConstraintIndexLoaded* index, int32_t prompt_len,
                                        const ConstraintPictureOptions& opt = {});

// Ids of C below state `s` (its leaves form one breadth-first range).
int64_t constraint_items_below(const TransitionMatrix& tm, int64_t s);
// The state whose row holds the edge into `s` (s >= 1), by binary search over P.
int64_t constraint_parent_state(const TransitionMatrix& tm, int64_t s);

}  // namespace triescope
