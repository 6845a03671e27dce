// The trie over a constraint set, flattened breadth-first into a CSR
// transition matrix (STATIC Sec. 4.2, Figure 1d), with the paper's stacked
// (token, next) layout (App. A.1.1), optional bit-packed dense levels for the
// first d steps (App. A.1.2), and our compact layout.
//
// State numbering (both layouts): the root is state 0, then the nodes of
// level 1, level 2, ... each level in lexicographic order of its prefixes
// (breadth-first with children sorted by token). Edge e leads into state
// e + 1, so the children of state s are the states P[s] + 1 .. P[s + 1]: the
// compact layout drops the next-state array and stores tokens in 16 bits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/constraint/constraint_set.h"

namespace triescope {

enum class CsrLayout { stacked, compact };
const char* csr_layout_name(CsrLayout l);
CsrLayout csr_layout_parse(const std::string& s, const std::string& where);

struct TransitionMatrixOptions {
  int32_t dense_levels = 0;  // d in {0, 1, 2}, d < L
  CsrLayout layout = CsrLayout::stacked;
};

class TransitionMatrix {
 public:
  static TransitionMatrix build(const ConstraintSet& c, TransitionMatrixOptions opt);

  int32_t vocab_size = 0;
  int32_t length = 0;  // L
  int32_t dense_levels = 0;
  CsrLayout layout = CsrLayout::stacked;
  int64_t num_items = 0;
  std::vector<int64_t> level_start;  // [L + 2] states of level l are [level_start[l], level_start[l + 1])
  std::vector<int32_t> max_branch;   // [L] B_l: most children of any level-l node (l = 0 .. L-1)

  // Stacked layout (App. A.1.1): 4 + 8 bytes per state (K1 = 12).
  std::vector<int32_t> row_ptr;  // [S + 1] P: the edges of state s are [P[s], P[s + 1])
  std::vector<int32_t> edges;    // [E x 2] stacked (C[e], V[e]) = (token, next state)
  std::vector<int32_t> dense_states1;  // [|V|] d >= 1: state after token t at the root, 0 if none (K2 = 4)
  std::vector<int32_t> dense_states2;  // [|V| x |V|] d = 2: state after (t1, t2), 0 if none

  // Compact layout: row pointers only for states above the leaves, tokens in
  // 16 bits (32 when |V| > 65536), next state implied (edge e -> state e + 1),
  // dense state tables replaced by a rank directory over the dense bitmasks.
  std::vector<uint32_t> row_ptr_compact;  // [R + 2], R = level_start[L]; entries R and R + 1 are E
  std::vector<uint16_t> cols16;           // [E] token of edge e (|V| <= 65536)
  std::vector<uint32_t> cols32;           // [E] token of edge e (|V| > 65536)
  std::vector<uint32_t> dense_rank1;      // [words of dense_mask1] set bits before each word
  std::vector<uint32_t> dense_rank2;      // [words of dense_mask2] set bits before each word

  // Dense levels (both layouts), bit-packed LSB-first.
  int32_t words_per_row = 0;           // ceil(|V| / 64)
  std::vector<uint64_t> dense_mask1;   // [words_per_row] d >= 1: tokens the root allows
  std::vector<uint64_t> dense_mask2;   // [|V| x words_per_row] d = 2: row t1 = tokens allowed after (t1)

  int64_t num_states() const { return level_start.back(); }
  int64_t num_edges() const { return num_states() - 1; }
  int64_t level_size(int32_t l) const { return level_start[static_cast<size_t>(l) + 1] - level_start[static_cast<size_t>(l)]; }
  int32_t level_of(int64_t state) const;

  // Layout-independent readers (used by the CLI, tests and next_state).
  int64_t row_begin(int64_t s) const;
  int64_t row_end(int64_t s) const;
  int32_t edge_token(int64_t e) const;
  int64_t edge_next(int64_t e) const { return layout == CsrLayout::stacked ? edges[static_cast<size_t>(e) * 2 + 1] : e + 1; }
  // The token that leads into state s (s >= 1).
  int32_t state_token(int64_t s) const { return edge_token(s - 1); }

  // Bytes held, split by array and by trie level.
  struct Memory {
    int64_t row_ptr = 0, cols = 0, next = 0, dense_mask = 0, dense_states = 0, dense_rank = 0;
    int64_t total() const { return row_ptr + cols + next + dense_mask + dense_states + dense_rank; }
  };
  Memory memory() const;
  nlohmann::json memory_json() const;  // totals, per-level rows, bytes per node and per 1M items
  nlohmann::json describe() const;
};

}  // namespace triescope
