// Block-wide max and sum of one double per thread, by a shared-memory tree
// (s_red holds blockDim.x entries; log2(blockDim.x) + 2 barriers; every
// thread gets the result). Used by the log-normalisers of topk_candidates.cu
// and static_step.cu. .cu files only.
#pragma once
#ifndef __CUDACC__
#error "cuda/detail/block_reduce.cuh is for .cu files"
#endif

namespace triescope::cuda::detail {

template <typename Op>
__device__ __forceinline__ double block_reduce(double v, double* s_red, const Op& op) {
  s_red[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) s_red[threadIdx.x] = op(s_red[threadIdx.x], s_red[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = s_red[0];
  __syncthreads();  // s_red may be reused at once
  return r;
}
__device__ __forceinline__ double block_max(double v, double* s_red) {
  return block_reduce(v, s_red, [](double a, double b) { return fmax(a, b); });
}
__device__ __forceinline__ double block_sum(double v, double* s_red) {
  return block_reduce(v, s_red, [](double a, double b) { return a + b; });
}

}  // namespace triescope::cuda::detail
