// Draws cuda/philox.cuh's uniforms in a kernel, one thread per draw: the
// device test compares them bit for bit with core's philox_uniform.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/philox.cuh"

namespace triescope::cuda {

struct PhiloxDrawsParams {
  const uint64_t* seed = nullptr;    // [n]
  const uint32_t* counter = nullptr; // [n x 5] step, layer, beam, draw (< 2^24), stream
  int64_t n = 0;
  double* out = nullptr;             // [n]
};
void philox_draws(const PhiloxDrawsParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
