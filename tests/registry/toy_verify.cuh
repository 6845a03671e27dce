// The toy drafting algorithm's verification kernel (toy_verify.cu): host-side launcher only.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace triescope::toy {

// The argmax of one logits row (ties: the lowest id), computed by a kernel.
// row: [vocab] host floats.
int32_t toy_argmax_device(const float* row, int32_t vocab);

}  // namespace triescope::toy
