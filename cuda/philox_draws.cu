// CPU twin: core/select/philox.h (philox_uniform)
#include "cuda/cuda_common.cuh"
#include "cuda/philox_draws.cuh"

namespace triescope::cuda {

namespace {
__global__ void philox_draws_kernel(PhiloxDrawsParams p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint32_t* c = p.counter + 5 * i;
    p.out[i] = philox_uniform_hd({p.seed[i], c[0], c[1], c[2]}, c[3], c[4]);
  }
}
}  // namespace

void philox_draws(const PhiloxDrawsParams& p, cudaStream_t stream) {
  if (p.n <= 0) return;
  const int64_t blocks = (p.n + 255) / 256;
  philox_draws_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("philox_draws_kernel");
}

}  // namespace triescope::cuda
