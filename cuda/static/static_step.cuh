// The fused STATIC constrained decoding step on the device (STATIC Alg. 1
// phases 1-4 with Alg. 2 for t >= d), in two kernel launches:
//   1. static_row_kernel, a block per beam row: the row's candidates (dense
//      bit rows for t < d, the VNTK slice of B_t entries for t >= d, both
//      layouts), the full-vocabulary log-normaliser of the raw logits in one
//      pass (double; the dense bit row read in the same pass), the
//      projection into the masked log-probs (optional output, not needed for
//      the ranking), the valid count, and the row's best k candidates (beam
//      score + log-prob, over the allowed tokens only) with their next states;
//   2. static_merge_kernel, a block per group (a batch's beams): the best k of
//      the group's rows' winners, their next states, and optionally the
//      beams' advance in place (states, scores, step) so a captured CUDA
//      graph can be replayed step after step with no host work.
// The step index is read from device memory, so one graph serves every step.
// CPU twin, same shape: core/constraint/static_step.h (StaticStep). Also
// checked against the full-vocabulary composition it replaces: core's
// log_softmax_row + dense_lookup / vntk_sparse + topk_candidates (per group)
// + static_next_state.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cuda_common.cuh"
#include "cuda/static/static_step_index.h"

namespace triescope::cuda {

struct StaticStepParams {
  StaticMatrixView matrix;           // device arrays (DeviceTransitionMatrix::view())
  const float* logits = nullptr;     // [n x V] raw logits
  int64_t* states = nullptr;         // [n] trie states (-1 = dead); rewritten when advance
  double* beam_scores = nullptr;     // [n] rewritten when advance
  int32_t* step = nullptr;           // [1] trie level t of this step; incremented when advance
  int32_t n = 0;                     // rows = batch x beams
  int32_t groups = 1;                // n / groups rows per group; top-k per group
  int32_t k = 0;                     // candidates per group (e.g. 2 x beams), at most kStaticMaxK
  bool advance = false;              // beams of group g become its first n/groups candidates
  double* masked_logprobs = nullptr; // [n x V] optional: log-softmax, -inf where masked
  int32_t* valid = nullptr;          // [n] optional: allowed tokens per row
  double* ws_score = nullptr;        // [n x k] workspace
  int64_t* ws_flat = nullptr;        // [n x k]
  int64_t* ws_next = nullptr;        // [n x k]
  double* out_score = nullptr;       // [groups x k] best first (0 past out_count)
  int64_t* out_flat = nullptr;       // [groups x k] row * V + token over all n rows; -1 past out_count
  int64_t* out_next = nullptr;       // [groups x k] next state; -1 past out_count
  int32_t* out_count = nullptr;      // [groups]
  KernelStatus* maybe_status = nullptr;  // state outside [-1, S), step outside [0, L): the row is treated as dead
};

inline constexpr int kStaticStepKernels = 2;  // launches per step (and nodes per captured graph)
// Both kernels rank with a block radix select (cuda/detail/topk_select.cuh),
// whose depth does not grow with k; the ranking keeps k candidates in shared memory.
inline constexpr int32_t kStaticMaxK = 1024;
inline constexpr int32_t kStaticRowStageCap = 4096;    // a row's candidates kept in shared memory between passes
inline constexpr int32_t kStaticMergeStageCap = 8192;  // a group's rows' winners, likewise

// Enqueues both kernels on `stream` (capturable).
void static_step(const StaticStepParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
