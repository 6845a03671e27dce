#include <math_constants.h>

#include "cuda/topk_candidates.cuh"
#include "cuda/detail/device_status.h"
#include "cuda/detail/topk_select.cuh"

namespace triescope::cuda {

namespace {

constexpr unsigned kThreads = 256;

__global__ void __launch_bounds__(kThreads) log_softmax_kernel(LogSoftmaxParams p) {
  __shared__ double s_red[kThreads];
  for (int32_t r = blockIdx.x; r < p.num_rows; r += gridDim.x) {
    const int32_t src = p.maybe_rows ? p.maybe_rows[r] : r;
    if (src < 0 || src >= p.logits_rows) {
      if (threadIdx.x == 0) detail::status_report(p.maybe_status, KernelError::row_out_of_range, r, src);
      continue;
    }
    const float* x = p.logits + static_cast<size_t>(src) * p.vocab;
    double mx = -CUDART_INF;
    for (int32_t v = threadIdx.x; v < p.vocab; v += blockDim.x) mx = fmax(mx, static_cast<double>(x[v]));
    s_red[threadIdx.x] = mx;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) s_red[threadIdx.x] = fmax(s_red[threadIdx.x], s_red[threadIdx.x + s]);
      __syncthreads();
    }
    mx = s_red[0];
    __syncthreads();
    double sum = 0.0;
    for (int32_t v = threadIdx.x; v < p.vocab; v += blockDim.x) sum += exp(static_cast<double>(x[v]) - mx);
    s_red[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) s_red[threadIdx.x] += s_red[threadIdx.x + s];
      __syncthreads();
    }
    const double lse = mx + log(s_red[0]);
    double* o = p.out + static_cast<size_t>(r) * p.vocab;
    for (int32_t v = threadIdx.x; v < p.vocab; v += blockDim.x) o[v] = static_cast<double>(x[v]) - lse;
    __syncthreads();
  }
}

using detail::block_best;
using detail::better;
using detail::Cand;

// Pass 1: the k best of row r, by k rounds of "best element strictly after
// the previous pick in the total order" (no state besides the last pick).
__global__ void __launch_bounds__(kThreads) topk_rows_kernel(TopkCandidatesParams p) {
  __shared__ Cand s_c[kThreads];
  for (int32_t r = blockIdx.x; r < p.num_rows; r += gridDim.x) {
    const double* lp = p.logprobs + static_cast<size_t>(r) * p.vocab;
    const double bs = p.beam_scores[r];
    Cand prev{0.0, -1, 0};
    for (int32_t j = 0; j < p.k; ++j) {
      Cand mine{0.0, -1, 0};
      for (int32_t v = threadIdx.x; v < p.vocab; v += blockDim.x) {
        const double l = lp[v];
        if (isinf(l)) continue;  // masked by a constraint
        const Cand c{bs + l, static_cast<long long>(r) * p.vocab + v, 0};
        if (prev.flat >= 0 && !better(prev, c)) continue;  // already picked
        if (better(c, mine)) mine = c;
      }
      const Cand best = block_best(mine, s_c);
      if (threadIdx.x == 0) {
        p.workspace_score[static_cast<size_t>(r) * p.k + j] = best.score;
        p.workspace_flat[static_cast<size_t>(r) * p.k + j] = best.flat;
      }
      prev = best;
      if (best.flat < 0) {  // the row has no more finite entries: pad with "none"
        for (int32_t jj = j + 1 + threadIdx.x; jj < p.k; jj += blockDim.x) p.workspace_flat[static_cast<size_t>(r) * p.k + jj] = -1;
        break;
      }
    }
  }
}

// Pass 2: the k best of the num_rows x k row winners, one block.
__global__ void __launch_bounds__(kThreads) topk_merge_kernel(TopkCandidatesParams p) {
  __shared__ Cand s_c[kThreads];
  const int32_t n = p.num_rows * p.k;
  Cand prev{0.0, -1, 0};
  int32_t count = 0;
  for (int32_t j = 0; j < p.k; ++j) {
    Cand mine{0.0, -1, 0};
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const Cand c{p.workspace_score[i], p.workspace_flat[i], 0};
      if (c.flat < 0) continue;
      if (prev.flat >= 0 && !better(prev, c)) continue;
      if (better(c, mine)) mine = c;
    }
    const Cand best = block_best(mine, s_c);
    if (threadIdx.x == 0) {
      p.out_score[j] = best.flat < 0 ? 0.0 : best.score;
      p.out_flat[j] = best.flat;
    }
    if (best.flat < 0) {
      for (int32_t jj = j + 1 + threadIdx.x; jj < p.k; jj += blockDim.x) {
        p.out_score[jj] = 0.0;
        p.out_flat[jj] = -1;
      }
      break;
    }
    prev = best;
    ++count;
  }
  if (threadIdx.x == 0) *p.out_count = count;
}

}  // namespace

void log_softmax_rows(const LogSoftmaxParams& p, cudaStream_t stream) {
  TS_CHECK(p.vocab >= 1 && p.num_rows >= 0 && p.logits_rows >= 0, "log_softmax_rows (cuda): bad sizes (vocab "
                                                                       << p.vocab << ", rows " << p.num_rows << ")");
  if (p.num_rows == 0) return;
  const unsigned grid = static_cast<unsigned>(p.num_rows > 65535 * 16 ? 65535 * 16 : p.num_rows);
  log_softmax_kernel<<<grid, kThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("log_softmax_kernel");
}

void topk_candidates(const TopkCandidatesParams& p, cudaStream_t stream) {
  TS_CHECK(p.num_rows >= 1 && p.vocab >= 1 && p.k >= 1, "topk_candidates (cuda): bad sizes (rows " << p.num_rows << ", vocab "
                                                                                                  << p.vocab << ", k " << p.k << ")");
  TS_CHECK(int64_t{p.num_rows} * p.k <= INT32_MAX, "topk_candidates (cuda): rows x k too large");
  const unsigned grid = static_cast<unsigned>(p.num_rows > 65535 * 16 ? 65535 * 16 : p.num_rows);
  topk_rows_kernel<<<grid, kThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("topk_rows_kernel");
  topk_merge_kernel<<<1, kThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("topk_merge_kernel");
}

}  // namespace triescope::cuda
