// The selection kernels as they were before the radix select (commit 9ae4cdc:
// cuda/topk_candidates.cu, cuda/static/static_step.cu, cuda/detail/
// topk_select.cuh), kept verbatim apart from names, as the "old kernel" that
// bench_cuda times in the same run as the new one, rep by rep, with outputs
// asserted equal. They rank the k best by k rounds of a block reduction.
// Not product code: nothing outside bench/ uses them.
#include <math_constants.h>

#include "bench/legacy_selection.cuh"
#include "cuda/detail/device_status.h"

namespace triescope::bench::legacy {

namespace {

using cuda::StaticStepParams;
using cuda::TopkCandidatesParams;
using namespace triescope::cuda;  // the matrix view helpers (static_step_index.h), as the original sources saw them

struct Cand {
  double score;
  long long flat;
  int aux;  // no default initialiser: Cand lives in __shared__ arrays (which take no initialisers)
};
__device__ __forceinline__ bool better(const Cand& a, const Cand& b) {
  if (a.flat < 0) return false;
  if (b.flat < 0) return true;
  return a.score > b.score || (a.score == b.score && a.flat < b.flat);
}

// Block-wide best of each thread's `mine` (s_c holds blockDim.x entries).
__device__ inline Cand block_best(Cand mine, Cand* s_c) {
  s_c[threadIdx.x] = mine;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s && better(s_c[threadIdx.x + s], s_c[threadIdx.x])) s_c[threadIdx.x] = s_c[threadIdx.x + s];
    __syncthreads();
  }
  const Cand best = s_c[0];
  __syncthreads();
  return best;
}

// The same block-wide best with warp shuffles: 2 __syncthreads instead of
// log2(blockDim.x) + 1. blockDim.x a multiple of 32; s_w holds
// blockDim.x / 32 + 1 entries. Lane 0 of warp 0 publishes the result in
// s_w[blockDim.x / 32], which the next call's first barrier protects.
__device__ __forceinline__ Cand warp_best(Cand c) {
  for (int o = 16; o > 0; o >>= 1) {
    Cand x;
    x.score = __shfl_down_sync(0xffffffffu, c.score, o);
    x.flat = __shfl_down_sync(0xffffffffu, c.flat, o);
    x.aux = __shfl_down_sync(0xffffffffu, c.aux, o);
    if (better(x, c)) c = x;  // lanes past 31 - o read their own value: no change
  }
  return c;  // lane 0: the warp's best
}
__device__ inline Cand block_best_warp(Cand mine, Cand* s_w) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  mine = warp_best(mine);
  if (lane == 0) s_w[warp] = mine;
  __syncthreads();
  if (warp == 0) {
    Cand c = lane < nw ? s_w[lane] : Cand{0.0, -1, 0};
    c = warp_best(c);
    if (lane == 0) s_w[nw] = c;
  }
  __syncthreads();
  return s_w[nw];
}

constexpr unsigned kThreads = 256;
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

__device__ __forceinline__ double block_max(double v, double* s_red) {
  s_red[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) s_red[threadIdx.x] = fmax(s_red[threadIdx.x], s_red[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = s_red[0];
  __syncthreads();
  return r;
}

__device__ __forceinline__ double block_sum(double v, double* s_red) {
  s_red[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) s_red[threadIdx.x] += s_red[threadIdx.x + s];
    __syncthreads();
  }
  const double r = s_red[0];
  __syncthreads();
  return r;
}

// A block per beam row, in the shape of the CPU step (core/constraint/
// static_step.h): the row's candidates (Alg. 2 slice or dense bit row), one
// pass over its logits for the log-normaliser, the optional projection, and
// the row's part of phase 3 (its best k candidates, each with its next
// state), ranked among the candidates only.
__global__ void __launch_bounds__(kThreads, 4) static_row_kernel(StaticStepParams p) {
  __shared__ double s_red[kThreads];
  __shared__ Cand s_c[kThreads / 32 + 1];
  const StaticMatrixView& m = p.matrix;
  const int32_t V = m.vocab;
  const int32_t step = *p.step;
  const bool step_ok = step >= 0 && step < m.length;
  for (int32_t r = blockIdx.x; r < p.n; r += gridDim.x) {
    const int64_t s = p.states[r];
    const bool state_ok = s >= -1 && s < m.num_states;
    if (threadIdx.x == 0) {
      if (!step_ok) cuda::detail::status_report(p.maybe_status, cuda::KernelError::step_out_of_range, r, step);
      else if (!state_ok)
        cuda::detail::status_report(p.maybe_status, cuda::KernelError::state_out_of_range, r,
                              static_cast<int32_t>(s < INT32_MIN ? INT32_MIN : (s > INT32_MAX ? INT32_MAX : s)));
    }
    // Bad input: the row is treated as a dead beam (all masked), so every output stays defined.
    const bool live = step_ok && state_ok;
    const bool dense = live && step < m.dense_levels;
    const bool sparse = live && !dense;

    // Phase 2's lookups first (Alg. 2: boundary lookup, a slice of exactly
    // B_t slots; dense: a bit row, null = none), so phase 1's pass can use them.
    const uint64_t* bits = dense ? step_dense_row(m, s, step) : nullptr;
    int64_t start = 0, len = 0;
    int32_t Bt = 0;
    if (sparse) {
      const int64_t row = step_row(m, s);
      start = step_row_begin(m, row);
      len = step_row_end(m, row) - start;
      Bt = m.max_branch[step];
    }
    const int32_t slots = static_cast<int32_t>(len < Bt ? len : Bt);  // Range(B_t) < len

    // Phase 1, fused: one pass over the logits for the full-vocabulary
    // log-normaliser (each thread a running max and a sum of exponentials
    // rescaled when its max grows; -inf logits add nothing), a dense row's
    // bit mask read in the same pass (its allowed count). Nothing is written.
    const float* x = p.logits + static_cast<size_t>(r) * V;
    double mx = -CUDART_INF, sum = 0.0, allowed = 0.0;
    for (int32_t v = threadIdx.x; v < V; v += blockDim.x) {
      if (bits) allowed += step_bit(bits, v) ? 1.0 : 0.0;
      const double xv = static_cast<double>(x[v]);
      if (xv == -CUDART_INF) continue;
      if (xv > mx) {
        sum = sum * exp(mx - xv) + 1.0;
        mx = xv;
      } else {
        sum += exp(xv - mx);
      }
    }
    const double row_max = block_max(mx, s_red);
    const double row_sum = block_sum(mx == -CUDART_INF ? 0.0 : sum * exp(mx - row_max), s_red);
    const double lse = row_max == -CUDART_INF ? -CUDART_INF : row_max + log(row_sum);
    int32_t count = sparse ? slots : 0;
    if (bits) count = static_cast<int32_t>(block_sum(allowed, s_red));

    // Phase 4 projection (optional output): -inf, then the allowed log-probs.
    if (p.masked_logprobs) {
      double* o = p.masked_logprobs + static_cast<size_t>(r) * V;
      for (int32_t v = threadIdx.x; v < V; v += blockDim.x)
        o[v] = (bits && step_bit(bits, v)) ? static_cast<double>(x[v]) - lse : -CUDART_INF;
      if (sparse) {
        __syncthreads();  // the -inf fill of this row happens before the scatter
        for (int32_t k = threadIdx.x; k < Bt; k += blockDim.x) {
          const int32_t raw = step_edge_token(m, start + k);  // speculative read (0 past the edge array)
          const int32_t tok = k < len ? raw : V;               // sanitised: invalid slots go to the dummy column
          if (tok < V) o[tok] = static_cast<double>(x[tok]) - lse;
        }
      }
    }
    if (p.valid && threadIdx.x == 0) p.valid[r] = count;

    // Phase 3, row part: the row's best min(k, count) candidates by rounds of
    // "best strictly after the previous pick" (topk_candidates' order).
    const double bs = p.beam_scores[r];
    const int32_t rounds = count < p.k ? count : p.k;
    double* wsc = p.ws_score + static_cast<size_t>(r) * p.k;
    int64_t* wfl = p.ws_flat + static_cast<size_t>(r) * p.k;
    int64_t* wnx = p.ws_next + static_cast<size_t>(r) * p.k;
    Cand prev{0.0, -1, 0};
    int32_t j = 0;
    for (; j < rounds; ++j) {
      Cand mine{0.0, -1, 0};
      if (bits) {
        for (int32_t v = threadIdx.x; v < V; v += blockDim.x) {
          if (!step_bit(bits, v) || x[v] == -CUDART_INF) continue;  // a -inf log-prob is masked, as in topk_candidates
          const Cand c{bs + (static_cast<double>(x[v]) - lse), static_cast<long long>(r) * V + v, v};
          if (prev.flat >= 0 && !better(prev, c)) continue;
          if (better(c, mine)) mine = c;
        }
      } else {
        for (int32_t k = threadIdx.x; k < slots; k += blockDim.x) {
          const int32_t tok = step_edge_token(m, start + k);
          if (x[tok] == -CUDART_INF) continue;
          const Cand c{bs + (static_cast<double>(x[tok]) - lse), static_cast<long long>(r) * V + tok, k};
          if (prev.flat >= 0 && !better(prev, c)) continue;
          if (better(c, mine)) mine = c;
        }
      }
      const Cand best = block_best_warp(mine, s_c);
      if (best.flat < 0) break;  // only with NaN scores; keeps the outputs defined
      if (threadIdx.x == 0) {
        wsc[j] = best.score;
        wfl[j] = best.flat;
        // Phase 4 gather: the chosen token's next state.
        wnx[j] = bits ? step_dense_next(m, s, step, best.aux) : step_edge_next(m, start + best.aux);
      }
      prev = best;
    }
    for (int32_t jj = j + threadIdx.x; jj < p.k; jj += blockDim.x) {
      wsc[jj] = 0.0;
      wfl[jj] = -1;
      wnx[jj] = -1;
    }
    __syncthreads();
  }
}

// A block per group: the best k of the group's rows' winners (their union
// holds the group's top k), their next states, and the optional advance. Each
// row's winners are already in order (best first, -1 padded), so this is a
// k-way merge: a cursor per row (dynamic shared memory, M ints), and each
// round reads only the rows' current heads.
__global__ void __launch_bounds__(kThreads) static_merge_kernel(StaticStepParams p) {
  __shared__ Cand s_c[kThreads / 32 + 1];
  extern __shared__ int32_t s_cursor[];  // [M]
  const int32_t M = p.n / p.groups;
  for (int32_t g = blockIdx.x; g < p.groups; g += gridDim.x) {
    const size_t base = static_cast<size_t>(g) * M * p.k;
    double* osc = p.out_score + static_cast<size_t>(g) * p.k;
    int64_t* ofl = p.out_flat + static_cast<size_t>(g) * p.k;
    int64_t* onx = p.out_next + static_cast<size_t>(g) * p.k;
    for (int32_t i = threadIdx.x; i < M; i += blockDim.x) s_cursor[i] = 0;
    __syncthreads();
    int32_t count = 0;
    for (int32_t j = 0; j < p.k; ++j) {
      Cand mine{0.0, -1, 0};
      for (int32_t i = threadIdx.x; i < M; i += blockDim.x) {
        const int32_t c = s_cursor[i];
        if (c >= p.k) continue;
        const size_t w = base + static_cast<size_t>(i) * p.k + c;
        const Cand cand{p.ws_score[w], p.ws_flat[w], i};
        if (better(cand, mine)) mine = cand;  // better() never prefers a "none" (flat < 0)
      }
      const Cand best = block_best_warp(mine, s_c);
      if (best.flat < 0) break;
      if (threadIdx.x == 0) {
        const int32_t c = s_cursor[best.aux];
        osc[j] = best.score;
        ofl[j] = best.flat;
        onx[j] = p.ws_next[base + static_cast<size_t>(best.aux) * p.k + c];
        s_cursor[best.aux] = c + 1;
      }
      __syncthreads();  // the cursor advance is visible to the next round
      ++count;
    }
    for (int32_t jj = count + threadIdx.x; jj < p.k; jj += blockDim.x) {
      osc[jj] = 0.0;
      ofl[jj] = -1;
      onx[jj] = -1;
    }
    if (threadIdx.x == 0) p.out_count[g] = count;
    if (p.advance) {
      __syncthreads();  // thread 0's picks are visible to the block
      for (int32_t j = threadIdx.x; j < M; j += blockDim.x) {
        const size_t row = static_cast<size_t>(g) * M + j;
        const bool ok = j < count;
        p.states[row] = ok ? onx[j] : -1;
        p.beam_scores[row] = ok ? osc[j] : -CUDART_INF;
      }
    }
    __syncthreads();
  }
  // The row kernel (earlier in the stream) was the step's only other reader.
  if (p.advance && blockIdx.x == 0 && threadIdx.x == 0) *p.step += 1;
}

}  // namespace

void topk_candidates(const TopkCandidatesParams& p, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(p.num_rows);
  topk_rows_kernel<<<grid, kThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("legacy topk_rows_kernel");
  topk_merge_kernel<<<1, kThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("legacy topk_merge_kernel");
}

void static_step(const StaticStepParams& p, cudaStream_t stream) {
  const int32_t M = p.n / p.groups;
  static_row_kernel<<<static_cast<unsigned>(p.n), kThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("legacy static_row_kernel");
  static_merge_kernel<<<static_cast<unsigned>(p.groups), kThreads, static_cast<size_t>(M) * sizeof(int32_t), stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("legacy static_merge_kernel");
}

}  // namespace triescope::bench::legacy
