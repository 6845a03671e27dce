// The constraint set a STATIC trace was decoded under, found again and
// indexed the way the decoder indexed it (core's own TransitionMatrix::build,
// the header's layout and dense levels), so a viewer can show the CSR rows,
// the dense bit rows and the prefix tree around the beams. The trace records
// only each beam's state, row and valid count; everything else comes from
// the set, which is checked against the header (sha256, items, L, |V|)
// before anything is shown from it.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/constraint/constraint_set.h"
#include "core/constraint/transition_matrix.h"
#include "core/trace/header_record.h"

namespace triescope {

// The header's config.constraint (docs/trace-format.md, StaticConstraint::describe).
struct ConstraintHeader {
  std::string name;              // "vntk_stacked_d0"
  std::string impl;              // vntk | pointer_trie | ppv_exact | ppv_approx | hash_bitmap
  CsrLayout layout = CsrLayout::stacked;
  int32_t dense_levels = 0;      // d
  int32_t length = 0;            // L
  int32_t vocab_size = 0;        // |V|
  int64_t states = -1;           // CSR states, -1 when not recorded
  std::vector<int32_t> max_branch;  // [L] B_t, empty when not recorded
  std::string set_file;          // as the sample names it (relative to the sample's folder); empty: set made in memory
  std::string set_sha256;        // empty when not recorded
  int64_t set_items = -1;
  // Recorded states are breadth-first CSR ids (vntk; the pointer trie records
  // its node's breadth-first id): comparable with the rebuilt index.
  bool states_are_csr() const { return impl == "vntk" || impl == "pointer_trie"; }
};

// nullopt when the header has no config.constraint. Throws Error naming
// `origin` and the field (config.constraint.set.items ...) on a malformed one.
std::optional<ConstraintHeader> constraint_header_read(const HeaderRecord& header, const std::string& origin);

// A set found, checked and indexed.
struct ConstraintIndexLoaded {
  std::shared_ptr<const ConstraintSet> set;
  std::shared_ptr<const TransitionMatrix> matrix;  // the header's layout and d
  std::string path;                                // the file read
  double read_seconds = 0, build_seconds = 0;
};

struct ConstraintLoadResult {
  std::shared_ptr<const ConstraintIndexLoaded> index;  // null: show what the records alone say
  std::string message;  // what was loaded, or why nothing was (names the file and the field)
};

// Where the header's set file may be: `chosen` alone when given (a path the
// user picked); else next to the trace file (for a live run, origin
// "live: <sample>", next to the sample, as the sample resolved it), then in
// each folder of `also_in` (a viewer passes the bundled samples folder, so a
// bundled sample's trace written elsewhere finds its set).
std::vector<std::string> constraint_file_candidates(const ConstraintHeader& h, const std::string& trace_origin,
                                                    const std::string& chosen = "", const std::vector<std::string>& also_in = {});

// Reads the candidates that exist, in order, and indexes the first whose set
// matches the header (sha256, items, length, vocab_size, states), building
// the matrix. Never throws for a missing, unreadable or changed file: the
// message names each file tried and why it was not used, and the index is null.
ConstraintLoadResult constraint_index_load(const ConstraintHeader& h, const std::vector<std::string>& candidates);

}  // namespace triescope
