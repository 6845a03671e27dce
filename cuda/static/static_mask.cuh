// Launcher of the STATIC masking kernel (cuda/static/static_mask_rows.h): a block
// per beam row over the decoder's log-probs, for the cuda backend's
// ConstraintIndex (cuda/static/static_constraint_index.h).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/static/static_step_index.h"

namespace triescope::cuda {

template <class T>
struct StaticMaskParams {
  StaticMatrixView matrix;        // device arrays (DeviceTransitionMatrix::view())
  const int64_t* states = nullptr;  // [n]
  int32_t n = 0;
  int32_t step = 0;               // trie level t (host-known: decoders pass it)
  const T* in = nullptr;          // [n x V] log-probs
  T* out = nullptr;               // [n x V] masked log-probs
  int32_t* valid = nullptr;       // [n]
  int64_t* row_range = nullptr;   // [n x 2] sparse: [P[r], P[r + 1]) read (0 at dense steps)
  int64_t* dense_next = nullptr;  // [n x V] dense steps (optional): next state of every token, -1 = not allowed
  int32_t* cand_tok = nullptr;    // [n x B_t] sparse steps (optional)
  int64_t* cand_next = nullptr;   // [n x B_t] sparse steps (optional)
  int32_t bt = 0;                 // B_t of this step (the candidate arrays' row width)
};

template <class T>
void static_mask(const StaticMaskParams<T>& p, cudaStream_t stream);

}  // namespace triescope::cuda
