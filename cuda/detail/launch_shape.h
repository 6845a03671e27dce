// Host-side launch shaping shared by the selection, log-softmax and
// synthetic-logits launchers. .cu files only.
#pragma once
#ifndef __CUDACC__
#error "cuda/detail/launch_shape.h is for .cu files"
#endif
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace triescope::cuda::detail {

// Blocks a launch aims for: two waves of an H100's or H200's 132 SMs. A fixed
// number, never the device's, so a split (and the results) never depend on the device.
inline constexpr int64_t kFillBlocks = 264;

// Chunks to cut each of `rows` rows of `width` entries into, so that rows x
// chunks is about kFillBlocks, each chunk at least `min_chunk` wide (at least 1).
inline int32_t chunks_to_fill(int64_t rows, int64_t width, int64_t min_chunk) {
  const int64_t want = (kFillBlocks + rows - 1) / rows, most = (width + min_chunk - 1) / min_chunk;
  return static_cast<int32_t>(std::max<int64_t>(1, std::min(want, most)));
}

// Lets `kernel` take `bytes` of dynamic shared memory (over 48 KiB needs the opt-in).
inline void allow_dynamic_shared(const void* kernel, size_t bytes, const char* what) {
  TS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
                what << ": " << bytes << " bytes of dynamic shared memory");
}

}  // namespace triescope::cuda::detail
