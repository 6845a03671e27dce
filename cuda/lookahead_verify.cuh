// Lookahead verification on the device: the greedy token of every row of the
// verification pass (a block per row) and the longest matching candidate
// path (one thread), cuda/lookahead_verify.h. CPU twin: the verification in
// core/decode/lookahead.cpp (argmax_row and its walk). Exact: comparisons only.
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/lookahead_verify.h"

namespace triescope::cuda {

// Every pointer in `a` is device memory. Two launches on `stream`.
void lookahead_verify(const LookaheadVerifyArgs& a, cudaStream_t stream);

}  // namespace triescope::cuda
