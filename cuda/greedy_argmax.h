// Greedy decoding's argmax seam (core/decode/greedy_decode.h, GreedyArgmax)
// on the cuda backend: the row's argmax by the lookahead verification
// kernel's block argmax (cuda/lookahead_verify.h, argmax_row_block) over
// that one row, with no candidates; on the host (CPU tests) the same block
// code with a block of one thread. Exact: comparisons only. Plain C++ header.
#pragma once
#include <memory>

#include "cuda/verify_exec.h"

namespace triescope {
class GreedyArgmax;
}  // namespace triescope

namespace triescope::cuda {

// Device: throws when no device is usable. The backend installs it with
// VerifierSet::put_seam under kGreedyArgmaxSeam (cuda/cuda_backend.cpp).
std::shared_ptr<GreedyArgmax> make_greedy_argmax(VerifyExec exec);

}  // namespace triescope::cuda
