// Each row's log-normaliser on the device, bit for bit the CPU's
// row_log_normaliser pass (core/select/log_normaliser.h): lane i of 32 sums
// exp(logit - running maximum) over the logits i mod 32 in order, rescaled
// when a block of 32 raises the maximum, then lse_math::finish (the lane sum
// in order and lse_math::log_positive). Every operation is lse_math's
// (core/select/lse_math.h), the one definition both sides compute with.
//
// Two phases in one launch of one 32-thread block per row: the lanes find
// the row's block maxima (each block of 32 logits, in any order: a maximum
// is exact), then each lane replays the running maximum over them and sums
// its own logits: ceil(vocab / 32) dependent steps a lane, no shuffles.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

struct RowLogNormaliserParams {
  const float* logits = nullptr;         // [num_rows x vocab]
  int32_t num_rows = 0;
  int32_t vocab = 0;
  float* workspace = nullptr;            // [row_log_normaliser_workspace_size(num_rows, vocab)] the block maxima
  double* out_lse = nullptr;             // [num_rows]
  double* maybe_out_parts = nullptr;     // [num_rows x 33]: the 32 lane sums, then the maximum (-inf: no finite logit)
  KernelStatus* maybe_status = nullptr;  // a NaN or +inf logit: KernelError::bad_logit (row, token)
};
int64_t row_log_normaliser_workspace_size(int32_t num_rows, int32_t vocab);
void row_log_normalisers(const RowLogNormaliserParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
