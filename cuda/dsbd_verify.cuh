// Speculative verification on the device: DSBD's layer verification
// (Algorithm 1 lines 13-29) and plain speculative decoding's chain
// verification, one thread block each, drawing cuda/philox.cuh's numbers on
// the CPU's counters. The algorithm is cuda/dsbd_verify.h (shared with its
// host run); CPU twins: dsbd_verify_layer (core/decode/dsbd.h) and
// speculative_verify_chain (core/decode/speculative.h). Decisions, outputs,
// u and accept_prob are bit-identical by construction (same IEEE operations
// in the same order; see cuda/dsbd_verify.h).
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/dsbd_verify.h"

namespace triescope::cuda {

// Every pointer in `a` is device memory. One block; the sequential sums
// bound its speed (O(n) per rejection on one thread), see docs/cuda.md.
void dsbd_verify_layer(const DsbdVerifyArgs& a, cudaStream_t stream);
void speculative_verify_chain(const SpecVerifyArgs& a, cudaStream_t stream);

}  // namespace triescope::cuda
