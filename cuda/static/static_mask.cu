// CPU twin: core/constraint/vntk.h (dense_lookup, vntk_sparse, static_next_state)
#include <math_constants.h>

#include "core/common/error.h"
#include "cuda/cuda_common.cuh"
#include "cuda/static/static_mask.cuh"
#include "cuda/static/static_mask_rows.h"

namespace triescope::cuda {

namespace {

constexpr unsigned kMaskThreads = 256;

template <class T>
__device__ __forceinline__ T neg_inf();
template <>
__device__ __forceinline__ float neg_inf<float>() { return -CUDART_INF_F; }
template <>
__device__ __forceinline__ double neg_inf<double>() { return -CUDART_INF; }

// A block per row (grid-stride): pass 1, a barrier (the sparse -inf fill
// precedes the scatter), pass 2; thread 0 writes the count and the row read.
template <class T>
__global__ void __launch_bounds__(kMaskThreads) static_mask_kernel(StaticMaskParams<T> p) {
  const StaticMatrixView& m = p.matrix;
  const size_t V = static_cast<size_t>(m.vocab);
  const int32_t tid = static_cast<int32_t>(threadIdx.x), stride = static_cast<int32_t>(blockDim.x);
  for (int32_t r = blockIdx.x; r < p.n; r += gridDim.x) {
    const int64_t s = p.states[r];
    const StaticMaskRowPlan plan = static_mask_plan(m, s, p.step);
    const T* in = p.in + r * V;
    T* out = p.out + r * V;
    static_mask_pass1(m, plan, s, p.step, in, out, p.dense_next ? p.dense_next + r * V : nullptr, neg_inf<T>(), tid, stride);
    __syncthreads();
    const size_t w = static_cast<size_t>(r) * static_cast<size_t>(p.bt);
    static_mask_pass2(m, plan, in, out, p.cand_tok ? p.cand_tok + w : nullptr, p.cand_next ? p.cand_next + w : nullptr, tid, stride);
    if (tid == 0) {
      p.valid[r] = static_mask_count(m, plan);
      p.row_range[2 * static_cast<size_t>(r)] = plan.dense ? 0 : plan.begin;
      p.row_range[2 * static_cast<size_t>(r) + 1] = plan.dense ? 0 : plan.end;
    }
    __syncthreads();
  }
}

}  // namespace

template <class T>
void static_mask(const StaticMaskParams<T>& p, cudaStream_t stream) {
  TS_CHECK(p.matrix.vocab >= 1 && p.matrix.level_start && p.matrix.max_branch,
           "static_mask (cuda): the matrix view is empty (upload a TransitionMatrix first)");
  TS_CHECK(p.n >= 1 && p.states && p.in && p.out && p.valid && p.row_range, "static_mask (cuda): a required device pointer is null");
  TS_CHECK(p.step >= 0, "static_mask (cuda): step " << p.step << " < 0");
  const unsigned grid = static_cast<unsigned>(p.n > 65535 * 16 ? 65535 * 16 : p.n);
  static_mask_kernel<T><<<grid, kMaskThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("static_mask_kernel");
}

template void static_mask<float>(const StaticMaskParams<float>&, cudaStream_t);
template void static_mask<double>(const StaticMaskParams<double>&, cudaStream_t);

}  // namespace triescope::cuda
