// CPU twin: core/decode/dsbd.h (dsbd_verify_layer), core/decode/speculative.h (speculative_verify_chain)
#include "cuda/cuda_common.cuh"
#include "cuda/detail/device_block.cuh"
#include "cuda/dsbd_verify.cuh"

namespace triescope::cuda {

namespace {

constexpr unsigned kThreads = 256;

using detail::DeviceBlock;

__global__ void __launch_bounds__(kThreads) dsbd_verify_kernel(DsbdVerifyArgs a) {
  __shared__ VerifyShared sh;
  DeviceBlock blk;
  dsbd_verify_block(a, sh, blk);
}

__global__ void __launch_bounds__(kThreads) speculative_verify_kernel(SpecVerifyArgs a) {
  __shared__ VerifyShared sh;
  DeviceBlock blk;
  speculative_verify_block(a, sh, blk);
}

}  // namespace

void dsbd_verify_layer(const DsbdVerifyArgs& a, cudaStream_t stream) {
  TS_CHECK(a.width >= 1, "dsbd_verify_layer (cuda): width must be >= 1, got " << a.width);
  TS_CHECK(a.num_drafts >= 0 && a.num_drafts < (1 << 24), "dsbd_verify_layer (cuda): " << a.num_drafts << " drafts (Philox draw index < 2^24)");
  TS_CHECK(a.width < (1 << 24), "dsbd_verify_layer (cuda): width " << a.width << " (Philox draw index < 2^24)");
  dsbd_verify_kernel<<<1, kThreads, 0, stream>>>(a);
  TS_CUDA_CHECK_LAUNCH("dsbd_verify_kernel");
}

void speculative_verify_chain(const SpecVerifyArgs& a, cudaStream_t stream) {
  TS_CHECK(a.g >= 0 && a.vocab >= 1, "speculative_verify_chain (cuda): g " << a.g << ", vocab " << a.vocab);
  speculative_verify_kernel<<<1, kThreads, 0, stream>>>(a);
  TS_CUDA_CHECK_LAUNCH("speculative_verify_kernel");
}

}  // namespace triescope::cuda
