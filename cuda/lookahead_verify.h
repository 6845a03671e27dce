// Lookahead verification (lookahead-trie-verification-ko.md, Alg. 1 line 5)
// as inline __host__ __device__ code: the greedy token after every row of
// the verification pass (an argmax per row, a block per row on the device),
// then the longest candidate path whose every token is its parent's greedy
// token. A plain C++ test runs the same code with a block of one thread.
//
// The twin (core/decode/lookahead.cpp) walks the trie from the root taking
// the child that matches, or scans each independent chain and keeps the
// first longest. Here instead each candidate gets its matched depth in one
// pass over the candidates in creation order (a parent before its children):
// depth = parent's depth + 1 when its token is the parent's greedy token and
// the parent is the root or matched, else 0; the answer is the deepest
// matched candidate, the lowest index on ties, and its ancestors. With the
// trie's distinct sibling tokens that is the walk's path; with chains laid
// out one after another it is the first longest chain prefix.
//
// Argmax rule of core's argmax_row (best = 0; v wins when row[v] > row[best]):
// the lowest index of the largest non-NaN value, or 0 when row[0] is NaN.
// Only comparisons, so the device result is exact.
#pragma once
#include <cstdint>
#include <memory>

#include "cuda/philox.cuh"  // TS_HD
#include "cuda/verify_exec.h"

namespace triescope {
class LookaheadVerifier;
}  // namespace triescope

namespace triescope::cuda {

// The verifier the backend installs (cuda/lookahead_verify.cpp): argmax rows
// and the longest matching path over the block code below. Device: throws
// when no device is usable.
std::shared_ptr<LookaheadVerifier> make_lookahead_verifier(VerifyExec exec);

struct LookaheadVerifyArgs {
  const float* logits = nullptr;       // [rows x vocab] the verification pass, rows in feed order
  int32_t rows = 0;
  int32_t vocab = 0;
  int32_t root_row = 0;                // row of the pending token (the candidates' root)
  const int32_t* cand_row = nullptr;   // [num_cands] row of each candidate, creation order
  const int32_t* cand_parent = nullptr;  // [num_cands] parent's candidate index, -1 for the root
  const int32_t* cand_token = nullptr;   // [num_cands]
  int32_t num_cands = 0;
  int32_t* greedy = nullptr;           // [rows] out: argmax of each row
  int32_t* depth = nullptr;            // [num_cands] out: matched depth, 0 = not matched
  int32_t* matched = nullptr;          // [num_cands] out: accepted candidates, root side first
  int32_t* num_matched = nullptr;      // [1] out
  int32_t* error = nullptr;            // [1] out: 0, or 1 + the first bad candidate index
};

// Is (vb, b) a better argmax than (va, a)? -1 = none. NaNs never enter.
TS_HD inline bool argmax_better(float vb, int32_t b, float va, int32_t a) {
  if (b < 0) return false;
  if (a < 0) return true;
  return vb > va || (vb == va && b < a);
}

// Block-cooperative argmax of one row; `s_val`/`s_idx` hold blk.size()
// entries (shared memory on the device). Thread 0 returns the answer.
template <class Block>
TS_HD int32_t argmax_row_block(const float* row, int32_t vocab, float* s_val, int32_t* s_idx, Block& blk) {
  const int64_t tid = blk.tid(), nt = blk.size();
  float bv = 0.0f;
  int32_t bi = -1;
  for (int64_t v = tid; v < vocab; v += nt) {
    const float x = row[v];
    if (x != x) continue;  // NaN: never beats anything
    if (argmax_better(x, static_cast<int32_t>(v), bv, bi)) {
      bv = x;
      bi = static_cast<int32_t>(v);
    }
  }
  s_val[tid] = bv;
  s_idx[tid] = bi;
  blk.sync();
  for (int64_t s = 1; s < nt; s *= 2) {  // works for any block size
    if (tid % (2 * s) == 0 && tid + s < nt && argmax_better(s_val[tid + s], s_idx[tid + s], s_val[tid], s_idx[tid])) {
      s_val[tid] = s_val[tid + s];
      s_idx[tid] = s_idx[tid + s];
    }
    blk.sync();
  }
  const int32_t best = s_idx[0];
  const bool row0_nan = !(row[0] == row[0]);
  blk.sync();  // s_idx may be reused by the next row
  return (row0_nan || best < 0) ? 0 : best;
}

// One thread: matched depths, the deepest matched candidate, its path.
TS_HD inline void lookahead_match_serial(const LookaheadVerifyArgs& a) {
  *a.error = 0;
  int32_t best = -1, best_depth = 0;
  for (int32_t c = 0; c < a.num_cands; ++c) {
    const int32_t par = a.cand_parent[c];
    const int32_t row = a.cand_row[c];
    if (par >= c || par < -1 || row < 0 || row >= a.rows) {  // parents come first; rows exist
      if (*a.error == 0) *a.error = 1 + c;
      a.depth[c] = 0;
      continue;
    }
    const int32_t parent_row = par < 0 ? a.root_row : a.cand_row[par];
    const bool parent_ok = par < 0 || a.depth[par] > 0;
    a.depth[c] = (parent_ok && a.cand_token[c] == a.greedy[parent_row]) ? (par < 0 ? 1 : a.depth[par] + 1) : 0;
    if (a.depth[c] > best_depth) {
      best_depth = a.depth[c];
      best = c;
    }
  }
  *a.num_matched = best_depth;
  for (int32_t c = best, k = best_depth - 1; c >= 0 && k >= 0; c = a.cand_parent[c], --k) a.matched[k] = c;
}

}  // namespace triescope::cuda
