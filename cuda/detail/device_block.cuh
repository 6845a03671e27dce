// The device side of the `Block` concept that the block-cooperative
// verifiers (dsbd_verify.h, lookahead_verify.h) are written against: thread
// index, block size, barrier. The CPU tests supply a host version backed by
// std::barrier. .cu files only.
#pragma once
#ifndef __CUDACC__
#error "cuda/detail/device_block.cuh is for .cu files"
#endif
#include <cstdint>

namespace triescope::cuda::detail {

struct DeviceBlock {
  __device__ int64_t tid() const { return threadIdx.x; }
  __device__ int64_t size() const { return blockDim.x; }
  __device__ void sync() { __syncthreads(); }
};

}  // namespace triescope::cuda::detail
