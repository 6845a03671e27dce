// Beam selection on the device: log-softmax of logits rows and the top 2b
// (beam, token) candidates with the CPU's exact tie-break (score descending,
// then flat index beam * vocab + token ascending; torch.topk's order).
// CPU twins: log_softmax_row (core/decode/beam_config.h) and
// topk_candidates (core/decode/topk_candidates.h).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

// out[r] = log_softmax(logits[maybe_rows ? maybe_rows[r] : r]) in double.
// Agrees with the CPU within a stated tolerance, not bit for bit: exp/log
// differ in their last ulp between libm and CUDA, and the sum's order differs.
struct LogSoftmaxParams {
  const float* logits = nullptr;        // [logits_rows x vocab]
  int32_t logits_rows = 0;
  int32_t vocab = 0;
  const int32_t* maybe_rows = nullptr;  // [num_rows] logits row feeding each output row
  int32_t num_rows = 0;
  double* out = nullptr;                // [num_rows x vocab]
  KernelStatus* maybe_status = nullptr;
};
void log_softmax_rows(const LogSoftmaxParams& p, cudaStream_t stream);

// The k best beam_scores[r] + logprobs[r][v] over finite logprobs (an
// infinite logprob is a token a constraint masked), best first. Two passes:
// the k best of each row (a block per row), then the k best of those.
// Cost O(k x vocab / threads) per row: meant for k = 2b small.
struct TopkCandidatesParams {
  const double* logprobs = nullptr;     // [num_rows x vocab]
  const double* beam_scores = nullptr;  // [num_rows]
  int32_t num_rows = 0;
  int32_t vocab = 0;
  int32_t k = 0;
  double* workspace_score = nullptr;    // [num_rows x k]
  int64_t* workspace_flat = nullptr;    // [num_rows x k]
  double* out_score = nullptr;          // [k] best first
  int64_t* out_flat = nullptr;          // [k] r * vocab + v; -1 past out_count
  int32_t* out_count = nullptr;         // [1] candidates found (< k when too few are finite)
};
void topk_candidates(const TopkCandidatesParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
