// CPU twin: core/select/log_normaliser.h (row_log_normaliser_parts, then lse_math::finish)
#include "cuda/row_log_normaliser.cuh"

#include "core/select/lse_math.h"
#include "cuda/detail/device_status.h"

namespace triescope::cuda {

namespace {

constexpr int32_t kLanes = lse_math::kLanes;

// Phase 1: lane l writes the maximum of blocks l, l + 32, ... (a NaN or
// +inf logit is reported and read as -inf).
__device__ void block_maxima(const RowLogNormaliserParams& p, int32_t row, const float* x, float* bmax, int32_t blocks) {
  for (int32_t b = static_cast<int32_t>(threadIdx.x); b < blocks; b += kLanes) {
    const int32_t lo = b * kLanes, hi = min(lo + kLanes, p.vocab);
    float bm = -HUGE_VALF;
    for (int32_t v = lo; v < hi; ++v) {
      const float xv = x[v];
      if (!(xv < HUGE_VALF)) {
        detail::status_report(p.maybe_status, KernelError::bad_logit, row, v);
        continue;
      }
      bm = bm < xv ? xv : bm;
    }
    bmax[b] = bm;
  }
}

__global__ void __launch_bounds__(kLanes) row_log_normaliser_kernel(RowLogNormaliserParams p) {
  const int32_t row = static_cast<int32_t>(blockIdx.x);
  const int32_t blocks = (p.vocab + kLanes - 1) / kLanes;
  const float* x = p.logits + static_cast<size_t>(row) * static_cast<size_t>(p.vocab);
  float* bmax = p.workspace + static_cast<size_t>(row) * static_cast<size_t>(blocks);
  block_maxima(p, row, x, bmax, blocks);
  __syncthreads();
  // Phase 2: every lane replays the same running maximum; lane l sums its logits.
  const int32_t l = static_cast<int32_t>(threadIdx.x);
  double partial = 0.0, mx = -HUGE_VAL;
  bool started = false;
  for (int32_t b = 0; b < blocks; ++b) {
    const double bm = static_cast<double>(bmax[b]);
    if (bm > mx) {
      if (started) partial = lse_math::mul(partial, lse_math::exp_or_zero(lse_math::sub(mx, bm)));
      mx = bm;
      started = true;
    }
    const int32_t v = b * kLanes + l;
    if (v < p.vocab) partial = lse_math::add(partial, lse_math::exp_or_zero(lse_math::sub(static_cast<double>(x[v]), mx)));
  }
  __shared__ double lanes[kLanes];
  lanes[l] = partial;
  __syncthreads();
  if (l != 0) return;
  p.out_lse[row] = lse_math::finish(lanes, started, mx);
  if (p.maybe_out_parts == nullptr) return;
  double* parts = p.maybe_out_parts + static_cast<size_t>(row) * (kLanes + 1);
  for (int32_t i = 0; i < kLanes; ++i) parts[i] = lanes[i];
  parts[kLanes] = mx;
}

}  // namespace

int64_t row_log_normaliser_workspace_size(int32_t num_rows, int32_t vocab) {
  return int64_t{num_rows} * ((int64_t{vocab} + kLanes - 1) / kLanes);
}

void row_log_normalisers(const RowLogNormaliserParams& p, cudaStream_t stream) {
  TS_CHECK(p.vocab >= 1 && p.num_rows >= 0, "row_log_normalisers (cuda): bad sizes (vocab " << p.vocab << ", rows " << p.num_rows << ")");
  TS_CHECK(p.workspace != nullptr && p.out_lse != nullptr, "row_log_normalisers (cuda): no workspace or output");
  if (p.num_rows == 0) return;
  row_log_normaliser_kernel<<<static_cast<unsigned>(p.num_rows), kLanes, 0, stream>>>(p);
  TS_CUDA_CHECK(cudaGetLastError(), "row_log_normalisers (cuda): launch");
}

}  // namespace triescope::cuda
