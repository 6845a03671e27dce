// CPU twin: core/constraint/static_step.h (StaticStep)
#include <math_constants.h>

#include <algorithm>

#include "cuda/detail/block_reduce.cuh"
#include "cuda/detail/device_status.h"
#include "cuda/detail/launch_shape.h"
#include "cuda/detail/topk_select.cuh"
#include "cuda/static/static_step.cuh"

namespace triescope::cuda {

namespace {

using detail::block_max;
using detail::block_sum;
using detail::Cand;

constexpr unsigned kThreads = detail::kSelectThreads;

// A block per beam row, in the shape of the CPU step (core/constraint/
// static_step.h): the row's candidates (Alg. 2 slice or dense bit row), one
// pass over its logits for the log-normaliser, the optional projection, and
// the row's part of phase 3 (its best k candidates, each with its next
// state), ranked among the candidates only.
__global__ void __launch_bounds__(kThreads, 2) static_row_kernel(StaticStepParams p, int32_t flat_bits, int32_t cap) {
  __shared__ double s_red[kThreads];
  __shared__ detail::TopkShared sh;
  extern __shared__ unsigned char s_dyn[];  // detail::topk_shared_bytes(cap, k)
  Cand* s_pick = nullptr;
  const detail::TopkStage stage = detail::block_topk_carve(s_dyn, cap, p.k, &s_pick);
  const StaticMatrixView& m = p.matrix;
  const int32_t V = m.vocab;
  const int32_t step = *p.step;
  const bool step_ok = step >= 0 && step < m.length;
  for (int32_t r = blockIdx.x; r < p.n; r += gridDim.x) {
    const int64_t s = p.states[r];
    const bool state_ok = s >= -1 && s < m.num_states;
    if (threadIdx.x == 0) {
      if (!step_ok) detail::status_report(p.maybe_status, KernelError::step_out_of_range, r, step);
      else if (!state_ok)
        detail::status_report(p.maybe_status, KernelError::state_out_of_range, r,
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

    // Phase 3, row part: the row's best min(k, count) candidates, ranked in
    // topk_candidates' order (a block radix select), each with its next state
    // (phase 4's gather).
    const double bs = p.beam_scores[r];
    double* wsc = p.ws_score + static_cast<size_t>(r) * p.k;
    int64_t* wfl = p.ws_flat + static_cast<size_t>(r) * p.k;
    int64_t* wnx = p.ws_next + static_cast<size_t>(r) * p.k;
    const long long flat0 = static_cast<long long>(r) * V;
    const auto emit = [&](int rank, const Cand& c) {
      wsc[rank] = c.flat < 0 ? 0.0 : c.score;
      wfl[rank] = c.flat;
      wnx[rank] = c.flat < 0 ? -1 : bits ? step_dense_next(m, s, step, c.aux) : step_edge_next(m, start + c.aux);
    };
    if (bits) {
      detail::block_topk(
          [&](int v, Cand& c) {
            if (!step_bit(bits, v) || x[v] == -CUDART_INF) return false;  // a -inf log-prob is masked, as in topk_candidates
            c = Cand{bs + (static_cast<double>(x[v]) - lse), flat0 + v, v};
            return true;
          },
          V, p.k, flat_bits, sh, stage, s_pick, emit);
    } else {
      detail::block_topk(
          [&](int k, Cand& c) {
            const int32_t tok = step_edge_token(m, start + k);
            if (x[tok] == -CUDART_INF) return false;
            c = Cand{bs + (static_cast<double>(x[tok]) - lse), flat0 + tok, k};
            return true;
          },
          slots, p.k, flat_bits, sh, stage, s_pick, emit);
    }
    __syncthreads();
  }
}

// A block per group: the best k of the group's rows' winners (their union
// holds the group's top k), ranked by the same block radix select, their
// next states, and the optional advance.
__global__ void __launch_bounds__(kThreads) static_merge_kernel(StaticStepParams p, int32_t flat_bits, int32_t cap) {
  __shared__ detail::TopkShared sh;
  extern __shared__ unsigned char s_dyn[];  // detail::topk_shared_bytes(cap, k)
  Cand* s_pick = nullptr;
  const detail::TopkStage stage = detail::block_topk_carve(s_dyn, cap, p.k, &s_pick);
  const int32_t M = p.n / p.groups;
  for (int32_t g = blockIdx.x; g < p.groups; g += gridDim.x) {
    const size_t base = static_cast<size_t>(g) * M * p.k;
    double* osc = p.out_score + static_cast<size_t>(g) * p.k;
    int64_t* ofl = p.out_flat + static_cast<size_t>(g) * p.k;
    int64_t* onx = p.out_next + static_cast<size_t>(g) * p.k;
    const int count = detail::block_topk(
        [&](int i, Cand& c) {
          const long long flat = p.ws_flat[base + i];
          if (flat < 0) return false;
          c = Cand{p.ws_score[base + i], flat, i};
          return true;
        },
        M * p.k, p.k, flat_bits, sh, stage, s_pick,
        [&](int rank, const Cand& c) {
          osc[rank] = c.flat < 0 ? 0.0 : c.score;
          ofl[rank] = c.flat;
          onx[rank] = c.flat < 0 ? -1 : p.ws_next[base + c.aux];
        });
    if (threadIdx.x == 0) p.out_count[g] = count;
    if (p.advance) {  // block_topk's last barrier made every pick visible to the block
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

void static_step(const StaticStepParams& p, cudaStream_t stream) {
  const StaticMatrixView& m = p.matrix;
  TS_CHECK(m.vocab >= 1 && m.length >= 1 && m.num_states >= 2 && m.level_start && m.max_branch,
           "static_step (cuda): the matrix view is empty (upload a TransitionMatrix first)");
  TS_CHECK(p.n >= 1 && p.groups >= 1 && p.n % p.groups == 0,
           "static_step (cuda): " << p.n << " rows do not split into " << p.groups << " groups");
  const int64_t M = p.n / p.groups;
  TS_CHECK(p.k >= 1 && p.k <= M * m.vocab, "static_step (cuda): k = " << p.k << " outside [1, " << M * m.vocab << "]");
  TS_CHECK(int64_t{p.n} * p.k <= INT32_MAX, "static_step (cuda): rows x k too large");
  TS_CHECK(p.k <= kStaticMaxK, "static_step (cuda): k = " << p.k << " is over " << kStaticMaxK
                                                        << " (the ranking keeps k candidates in shared memory)");
  TS_CHECK(M * p.k <= INT32_MAX, "static_step (cuda): rows per group x k too large");
  TS_CHECK(p.logits && p.states && p.beam_scores && p.step && p.ws_score && p.ws_flat && p.ws_next && p.out_score && p.out_flat &&
               p.out_next && p.out_count,
           "static_step (cuda): a required device pointer is null");
  const int flat_bits = detail::flat_bits_below(int64_t{p.n} * m.vocab);
  // Each block keeps its candidates in shared memory between radix passes: a
  // row's (at most |V|; up to kStaticRowStageCap, wider rows are re-read
  // each pass) and a group's rows' winners (up to kStaticMergeStageCap).
  const int32_t row_cap = std::min(m.vocab, kStaticRowStageCap);
  const int32_t merge_cap = static_cast<int32_t>(std::min<int64_t>(M * p.k, kStaticMergeStageCap));
  const size_t row_bytes = detail::topk_shared_bytes(row_cap, p.k), merge_bytes = detail::topk_shared_bytes(merge_cap, p.k);
  detail::allow_dynamic_shared(reinterpret_cast<const void*>(&static_row_kernel), row_bytes, "static_step (cuda): row kernel");
  detail::allow_dynamic_shared(reinterpret_cast<const void*>(&static_merge_kernel), merge_bytes, "static_step (cuda): merge kernel");
  const unsigned grid = static_cast<unsigned>(p.n > 65535 * 16 ? 65535 * 16 : p.n);
  static_row_kernel<<<grid, kThreads, row_bytes, stream>>>(p, flat_bits, row_cap);
  TS_CUDA_CHECK_LAUNCH("static_row_kernel");
  const unsigned mgrid = static_cast<unsigned>(p.groups > 65535 ? 65535 : p.groups);
  static_merge_kernel<<<mgrid, kThreads, merge_bytes, stream>>>(p, flat_bits, merge_cap);
  TS_CUDA_CHECK_LAUNCH("static_merge_kernel");
}

}  // namespace triescope::cuda
