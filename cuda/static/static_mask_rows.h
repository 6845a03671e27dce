// The masking part of the fused STATIC step (cuda/static/static_step.cuh), fed the
// decoder's own log-probs instead of raw logits: per beam row, the allowed
// tokens (dense bit row for t < d, Alg. 2's B_t-wide VNTK slice for t >= d),
// the projection (-inf, then the allowed values copied unchanged, so the
// masked row is bit-identical to core's dense_lookup / vntk_sparse), the
// valid count, and the next state of every allowed token (the Gather of
// Alg. 1 phase 4, computed before the decoder chooses). One definition used
// by the kernel (cuda/static/static_mask.cu, a block per row: `tid`/`stride` are
// the thread index and block size) and by its host run (tid 0, stride 1),
// which the CPU tests drive through whole decodes.
//
// Plain C++ (compiles with g++ and nvcc); no CUDA runtime needed.
#pragma once
#include <cstdint>

#include "cuda/static/static_step_index.h"

namespace triescope::cuda {

// What a row reads, decided by its state and the step (uniform per block).
struct StaticMaskRowPlan {
  bool dense = false;              // t < d: a bit row
  const uint64_t* bits = nullptr;  // dense: the allowed-token row, null = none
  int64_t begin = 0, end = 0;      // sparse: the CSR row read, [P[r], P[r + 1])
  int32_t bt = 0;                  // sparse: B_t (0 when t >= L: nothing allowed)
  int32_t slots = 0;               // sparse: min(len, B_t), the sanitised slots (Range(B_t) < len)
};

// States outside the rows (dead beams, leaves, out of range) read the empty
// row, like vntk.cpp; dense rows of a state at the wrong level are empty.
TS_HD StaticMaskRowPlan static_mask_plan(const StaticMatrixView& m, int64_t s, int32_t step) {
  StaticMaskRowPlan p;
  p.dense = step < m.dense_levels;
  if (p.dense) {
    p.bits = (s >= 0 && s < m.num_states) ? step_dense_row(m, s, step) : nullptr;
    return p;
  }
  const int64_t r = step_row(m, s);
  p.begin = step_row_begin(m, r);
  p.end = step_row_end(m, r);
  p.bt = (step >= 0 && step < m.length) ? m.max_branch[step] : 0;
  const int64_t len = p.end - p.begin;
  p.slots = static_cast<int32_t>(len < p.bt ? len : p.bt);
  return p;
}

// Allowed tokens of the row (thread 0's job in the kernel).
TS_HD int32_t static_mask_count(const StaticMatrixView& m, const StaticMaskRowPlan& p) {
  if (!p.dense) return p.slots;
  if (!p.bits) return 0;
  int32_t c = 0;
  for (int32_t w = 0; w < m.words_per_row; ++w) c += popcount64(p.bits[w]);
  return c;
}

// Pass 1 over a row. Dense: out[v] = in[v] where the bit is set, else -inf,
// and next[v] = the state after v (-1 where not allowed). Sparse: out = -inf
// (the scatter of pass 2 follows a barrier).
template <class T>
TS_HD void static_mask_pass1(const StaticMatrixView& m, const StaticMaskRowPlan& p, int64_t s, int32_t step, const T* in, T* out,
                             int64_t* dense_next, T neg_inf, int32_t tid, int32_t stride) {
  const int32_t V = m.vocab;
  if (!p.dense) {
    for (int32_t v = tid; v < V; v += stride) out[v] = neg_inf;
    return;
  }
  for (int32_t v = tid; v < V; v += stride) {
    const bool ok = p.bits && step_bit(p.bits, v);
    out[v] = ok ? in[v] : neg_inf;
    if (dense_next) dense_next[v] = ok ? step_dense_next(m, s, step, v) : -1;
  }
}

// Pass 2 (sparse only): the B_t slots, speculative reads (0 past the edge
// array), sanitised (token |V| and next 0 for invalid slots, Alg. 2 line
// 16), the valid ones scattered back. cand_tok / cand_next: [B_t].
template <class T>
TS_HD void static_mask_pass2(const StaticMatrixView& m, const StaticMaskRowPlan& p, const T* in, T* out, int32_t* cand_tok,
                             int64_t* cand_next, int32_t tid, int32_t stride) {
  if (p.dense) return;
  for (int32_t k = tid; k < p.bt; k += stride) {
    const bool ok = k < p.slots;
    const int32_t tok = step_edge_token(m, p.begin + k);
    const int64_t nxt = step_edge_next(m, p.begin + k);
    if (ok) out[tok] = in[tok];
    if (cand_tok) cand_tok[k] = ok ? tok : m.vocab;
    if (cand_next) cand_next[k] = ok ? nxt : 0;
  }
}

}  // namespace triescope::cuda
