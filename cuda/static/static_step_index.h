// Index arithmetic of the fused STATIC step (cuda/static/static_step.cuh) over a
// TransitionMatrix's arrays seen as raw pointers: one definition used by the
// kernel (device pointers) and by a CPU test (host pointers), which composes
// these functions into masks and next states and checks them against core's
// vntk.cpp. core/constraint/vntk.cpp is the independent reference and does
// not use this header.
//
// Plain C++ (compiles with g++ and nvcc); no CUDA runtime needed.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define TS_HD __host__ __device__ __forceinline__
#else
#define TS_HD inline
#endif

namespace triescope::cuda {

// The matrix as the kernel reads it. Stacked: row_ptr/edges (+ dense state
// tables); compact: row_ptr_u/cols16|cols32 (+ rank directories). Arrays a
// layout or d does not use are null.
struct StaticMatrixView {
  int32_t vocab = 0;
  int32_t length = 0;        // L
  int32_t dense_levels = 0;  // d
  int32_t words_per_row = 0; // ceil(V / 64)
  int32_t compact = 0;       // 0: stacked (paper A.1.1), 1: compact (ours)
  int64_t num_states = 0;    // S
  int64_t num_edges = 0;     // E = S - 1
  int64_t num_rows = 0;      // states below this read their own CSR row; others read row num_rows (empty)
  const int64_t* level_start = nullptr;  // [L + 2]
  const int32_t* max_branch = nullptr;   // [L] B_t
  const int32_t* row_ptr = nullptr;      // stacked [S + 1]
  const uint32_t* row_ptr_u = nullptr;   // compact [R + 2]
  const int32_t* edges = nullptr;        // stacked [E x 2] (token, next)
  const uint16_t* cols16 = nullptr;      // compact [E] (|V| <= 65536)
  const uint32_t* cols32 = nullptr;      // compact [E] (|V| > 65536)
  const uint64_t* mask1 = nullptr;       // d >= 1: [words_per_row]
  const uint64_t* mask2 = nullptr;       // d = 2: [V x words_per_row]
  const int32_t* dstates1 = nullptr;     // stacked, d >= 1: [V]
  const int32_t* dstates2 = nullptr;     // stacked, d = 2: [V x V]
  const uint32_t* rank1 = nullptr;       // compact, d >= 1: [words_per_row]
  const uint32_t* rank2 = nullptr;       // compact, d = 2: [V x words_per_row]
};

TS_HD int32_t popcount64(uint64_t w) {
#if defined(__CUDA_ARCH__)
  return __popcll(w);
#else
  return __builtin_popcountll(w);
#endif
}

// Alg. 2 phase 1: the row a state reads. Dead beams (-1), leaves without a
// row (compact) and the last state (stacked) read row num_rows, which is empty.
TS_HD int64_t step_row(const StaticMatrixView& m, int64_t s) { return (s >= 0 && s < m.num_rows) ? s : m.num_rows; }
TS_HD int64_t step_row_begin(const StaticMatrixView& m, int64_t r) {
  return m.compact ? static_cast<int64_t>(m.row_ptr_u[r]) : static_cast<int64_t>(m.row_ptr[r]);
}
TS_HD int64_t step_row_end(const StaticMatrixView& m, int64_t r) { return step_row_begin(m, r + 1); }

// Alg. 2 phase 2: slot reads of the speculative slice. Past the edge array
// they return 0 (jnp.take mode="fill"); the sanitisation discards them.
TS_HD int32_t step_edge_token(const StaticMatrixView& m, int64_t e) {
  if (e >= m.num_edges) return 0;
  if (!m.compact) return m.edges[2 * e];
  return m.cols16 ? static_cast<int32_t>(m.cols16[e]) : static_cast<int32_t>(m.cols32[e]);
}
TS_HD int64_t step_edge_next(const StaticMatrixView& m, int64_t e) {
  if (e >= m.num_edges) return 0;
  return m.compact ? e + 1 : static_cast<int64_t>(m.edges[2 * e + 1]);  // compact: edge e enters state e + 1
}

// Dense levels (Alg. 1 DenseLookup): the bit row of allowed tokens for state
// s at step t < d, or null when s has no valid continuation there (wrong
// level, dead). Step 1 reads row t1 of D_2, t1 = the token into s.
TS_HD const uint64_t* step_dense_row(const StaticMatrixView& m, int64_t s, int32_t step) {
  if (step == 0) return s == 0 ? m.mask1 : nullptr;
  if (step == 1 && s >= m.level_start[1] && s < m.level_start[2])
    return m.mask2 + static_cast<int64_t>(step_edge_token(m, s - 1)) * m.words_per_row;
  return nullptr;
}
TS_HD bool step_bit(const uint64_t* bits, int32_t v) { return (bits[v >> 6] >> (v & 63)) & 1u; }

// Dense levels: the state after an allowed token (precondition: the bit is set).
// Stacked: the state tables; compact: level start + rank of the bit in D_l.
TS_HD int64_t step_dense_next(const StaticMatrixView& m, int64_t s, int32_t step, int32_t tok) {
  const int64_t t1 = step == 1 ? static_cast<int64_t>(step_edge_token(m, s - 1)) : 0;
  if (!m.compact) return step == 0 ? m.dstates1[tok] : m.dstates2[t1 * m.vocab + tok];
  const int64_t word = (step == 0 ? 0 : t1 * m.words_per_row) + (tok >> 6);
  const uint64_t w = (step == 0 ? m.mask1 : m.mask2)[word];
  const uint64_t below = w & ((uint64_t{1} << (tok & 63)) - 1u);
  const uint32_t rank = (step == 0 ? m.rank1 : m.rank2)[word];
  return m.level_start[step + 1] + static_cast<int64_t>(rank) + popcount64(below);
}

}  // namespace triescope::cuda
