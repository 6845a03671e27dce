// CPU twin: core/select/topk_candidates.h (topk_candidates), core/select/log_normaliser.h (log_softmax_row)
#include <math_constants.h>

#include <algorithm>

#include "cuda/topk_candidates.cuh"
#include "cuda/detail/block_reduce.cuh"
#include "cuda/detail/device_status.h"
#include "cuda/detail/launch_shape.h"
#include "cuda/detail/topk_select.cuh"

namespace triescope::cuda {

namespace {

using detail::Cand;
constexpr unsigned kThreads = detail::kSelectThreads;

// The [begin, end) of chunk c of a row of `vocab` entries in `chunks` chunks
// (each a multiple of the block size, the last one shorter).
struct Chunk {
  int32_t begin, end;
};
__host__ __device__ __forceinline__ int32_t chunk_width(int32_t vocab, int32_t chunks) {
  return static_cast<int32_t>(((vocab + chunks - 1) / chunks + kThreads - 1) / kThreads * kThreads);
}
__device__ __forceinline__ Chunk row_chunk(int32_t vocab, int32_t chunks, int32_t c) {
  const int32_t per = chunk_width(vocab, chunks);
  const int32_t b = c * per;
  return {b < vocab ? b : vocab, b + per < vocab ? b + per : vocab};
}

// Block (row r, chunk c): the chunk's max and sum of exp(x - max), as
// workspace[(r * chunks + c) * 2 + {0, 1}].
__global__ void __launch_bounds__(kThreads) lse_partial_kernel(LogSoftmaxParams p, int32_t chunks) {
  __shared__ double s_red[kThreads];
  const int32_t r = static_cast<int32_t>(blockIdx.x) / chunks, c = static_cast<int32_t>(blockIdx.x) % chunks;
  const int32_t src = p.maybe_rows ? p.maybe_rows[r] : r;
  if (src < 0 || src >= p.logits_rows) {
    if (threadIdx.x == 0 && c == 0) detail::status_report(p.maybe_status, KernelError::row_out_of_range, r, src);
    return;
  }
  const Chunk ch = row_chunk(p.vocab, chunks, c);
  const float* x = p.logits + static_cast<size_t>(src) * p.vocab;
  double mx = -CUDART_INF;
  for (int32_t v = ch.begin + static_cast<int32_t>(threadIdx.x); v < ch.end; v += kThreads) mx = fmax(mx, static_cast<double>(x[v]));
  mx = detail::block_max(mx, s_red);
  double sum = 0.0;  // -inf entries add nothing (a chunk of only -inf sums to 0)
  for (int32_t v = ch.begin + static_cast<int32_t>(threadIdx.x); v < ch.end; v += kThreads) {
    const double xv = static_cast<double>(x[v]);
    if (xv != -CUDART_INF) sum += exp(xv - mx);
  }
  sum = detail::block_sum(sum, s_red);
  if (threadIdx.x == 0) {
    p.workspace[(static_cast<size_t>(r) * chunks + c) * 2] = mx;
    p.workspace[(static_cast<size_t>(r) * chunks + c) * 2 + 1] = sum;
  }
}

// Block (row r, chunk c): the row's log-normaliser from its chunks'
// partials (every thread folds them in the same order), then the chunk's outputs.
__global__ void __launch_bounds__(kThreads) log_softmax_write_kernel(LogSoftmaxParams p, int32_t chunks) {
  const int32_t r = static_cast<int32_t>(blockIdx.x) / chunks, c = static_cast<int32_t>(blockIdx.x) % chunks;
  const int32_t src = p.maybe_rows ? p.maybe_rows[r] : r;
  if (src < 0 || src >= p.logits_rows) return;  // reported by lse_partial_kernel
  const double* part = p.workspace + static_cast<size_t>(r) * chunks * 2;
  double mx = -CUDART_INF;
  for (int32_t i = 0; i < chunks; ++i) mx = fmax(mx, part[2 * i]);
  double sum = 0.0;
  for (int32_t i = 0; i < chunks; ++i)
    if (part[2 * i] != -CUDART_INF) sum += part[2 * i + 1] * exp(part[2 * i] - mx);
  const double lse = mx + log(sum);
  const Chunk ch = row_chunk(p.vocab, chunks, c);
  const float* x = p.logits + static_cast<size_t>(src) * p.vocab;
  double* o = p.out + static_cast<size_t>(r) * p.vocab;
  for (int32_t v = ch.begin + static_cast<int32_t>(threadIdx.x); v < ch.end; v += kThreads) o[v] = static_cast<double>(x[v]) - lse;
}

// The log-prob of flat entry i (of row r): read, or from the logits with
// log_softmax_row's own subtraction (the host's log-normaliser).
__device__ __forceinline__ double entry_logprob(const TopkCandidatesParams& p, int32_t r, long long i) {
  return p.maybe_logits ? static_cast<double>(p.maybe_logits[i]) - p.maybe_lse[r] : p.logprobs[i];
}

// detail::block_topk with its shared state and a stage of `cap` entries in the
// launch's dynamic shared memory (detail::topk_shared_bytes(cap, k) bytes):
// the k best of `count` candidates that read(i, out) yields, handed to
// write(rank, cand); returns how many there are.
template <typename Read, typename Write>
__device__ __forceinline__ int block_topk_staged(Read read, int count, int k, int flat_bits, int cap, Write write) {
  __shared__ detail::TopkShared sh;
  extern __shared__ unsigned char s_dyn[];  // detail::topk_shared_bytes(cap, k)
  Cand* s_pick = nullptr;
  const detail::TopkStage stage = detail::block_topk_carve(s_dyn, cap, k, &s_pick);
  return detail::block_topk(read, count, k, flat_bits, sh, stage, s_pick, write);
}

// The k best of `count` candidates (block_topk_staged) as the call's outputs:
// out_score / out_flat by rank (a "none" scores 0) and out_count.
template <typename Read>
__device__ __forceinline__ void block_topk_outputs(const TopkCandidatesParams& p, int count, int flat_bits, int cap, Read read) {
  const int picked = block_topk_staged(read, count, p.k, flat_bits, cap, [&](int rank, const Cand& cand) {
    p.out_score[rank] = cand.flat < 0 ? 0.0 : cand.score;
    p.out_flat[rank] = cand.flat;
  });
  if (threadIdx.x == 0) *p.out_count = picked;
}

// Block (row r, chunk c): the chunk's k best candidates, ranked, into the
// workspace's k entries of block (r, c) ("none" past the chunk's count).
__global__ void __launch_bounds__(kThreads) topk_chunk_kernel(TopkCandidatesParams p, int32_t chunks, int32_t flat_bits, int32_t cap) {
  const int32_t r = static_cast<int32_t>(blockIdx.x) / chunks, c = static_cast<int32_t>(blockIdx.x) % chunks;
  const Chunk ch = row_chunk(p.vocab, chunks, c);
  const double bs = p.beam_scores[r];
  const long long flat0 = static_cast<long long>(r) * p.vocab;
  double* wsc = p.workspace_score + static_cast<size_t>(blockIdx.x) * p.k;
  int64_t* wfl = p.workspace_flat + static_cast<size_t>(blockIdx.x) * p.k;
  block_topk_staged(
      [&](int i, Cand& out) {
        const int32_t v = ch.begin + i;
        const double l = entry_logprob(p, r, flat0 + v);
        if (isinf(l)) return false;  // masked by a constraint
        out = Cand{bs + l, flat0 + v, 0};
        return true;
      },
      ch.end - ch.begin, p.k, flat_bits, cap,
      [&](int rank, const Cand& cand) {
        wsc[rank] = cand.score;
        wfl[rank] = cand.flat;
      });
}

// One block: the k best of every chunk's winners.
__global__ void __launch_bounds__(kThreads) topk_merge_kernel(TopkCandidatesParams p, int32_t entries, int32_t flat_bits, int32_t cap) {
  block_topk_outputs(p, entries, flat_bits, cap, [&](int i, Cand& out) {
    const long long flat = p.workspace_flat[i];
    if (flat < 0) return false;
    out = Cand{p.workspace_score[i], flat, 0};
    return true;
  });
}

// One block over every row when rows x vocab fits the stage (at most
// kTopkStageCap entries, read once into shared memory): the k best directly,
// no chunk pass and no merge. Candidate i is flat index i = r * vocab + v.
__global__ void __launch_bounds__(kThreads) topk_single_kernel(TopkCandidatesParams p, int32_t flat_bits, int32_t cap) {
  block_topk_outputs(p, p.num_rows * p.vocab, flat_bits, cap, [&](int i, Cand& out) {
    const int32_t r = i / p.vocab;
    const double l = entry_logprob(p, r, i);
    if (isinf(l)) return false;  // masked by a constraint
    out = Cand{p.beam_scores[r] + l, static_cast<long long>(i), 0};
    return true;
  });
}

}  // namespace

int32_t row_chunks(int32_t rows, int32_t vocab) {
  TS_CHECK(rows >= 1 && vocab >= 1, "row_chunks (cuda): bad sizes (rows " << rows << ", vocab " << vocab << ")");
  return detail::chunks_to_fill(rows, vocab, kRowChunkMin);
}

int32_t row_chunk_width(int32_t vocab, int32_t chunks) { return chunk_width(vocab, chunks); }

int64_t log_softmax_workspace_size(int32_t num_rows, int32_t vocab) {
  return num_rows == 0 ? 0 : int64_t{num_rows} * row_chunks(num_rows, vocab) * 2;
}

void log_softmax_rows(const LogSoftmaxParams& p, cudaStream_t stream) {
  TS_CHECK(p.vocab >= 1 && p.num_rows >= 0 && p.logits_rows >= 0, "log_softmax_rows (cuda): bad sizes (vocab "
                                                                       << p.vocab << ", rows " << p.num_rows << ")");
  if (p.num_rows == 0) return;
  TS_CHECK(p.workspace != nullptr, "log_softmax_rows (cuda): no workspace (log_softmax_workspace_size entries)");
  const int32_t chunks = row_chunks(p.num_rows, p.vocab);
  TS_CHECK(int64_t{p.num_rows} * chunks <= INT32_MAX, "log_softmax_rows (cuda): " << p.num_rows << " rows are too many");
  const unsigned grid = static_cast<unsigned>(p.num_rows * chunks);
  lse_partial_kernel<<<grid, kThreads, 0, stream>>>(p, chunks);
  TS_CUDA_CHECK_LAUNCH("lse_partial_kernel");
  log_softmax_write_kernel<<<grid, kThreads, 0, stream>>>(p, chunks);
  TS_CUDA_CHECK_LAUNCH("log_softmax_write_kernel");
}

int64_t topk_candidates_workspace_size(int32_t num_rows, int32_t vocab, int32_t k) {
  return int64_t{num_rows} * row_chunks(num_rows, vocab) * k;
}

void topk_candidates(const TopkCandidatesParams& p, cudaStream_t stream) {
  TS_CHECK(p.num_rows >= 1 && p.vocab >= 1 && p.k >= 1, "topk_candidates (cuda): bad sizes (rows " << p.num_rows << ", vocab "
                                                                                                  << p.vocab << ", k " << p.k << ")");
  TS_CHECK((p.maybe_logits == nullptr) == (p.maybe_lse == nullptr), "topk_candidates (cuda): maybe_logits and maybe_lse go together");
  TS_CHECK(p.k <= kTopkMaxK, "topk_candidates (cuda): k = " << p.k << " is over " << kTopkMaxK
                                                            << " (the ranking keeps k candidates in shared memory)");
  const int64_t entries = topk_candidates_workspace_size(p.num_rows, p.vocab, p.k);
  TS_CHECK(entries <= INT32_MAX, "topk_candidates (cuda): rows x chunks x k = " << entries << " is too large");
  const int32_t chunks = row_chunks(p.num_rows, p.vocab);
  const int flat_bits = detail::flat_bits_below(int64_t{p.num_rows} * p.vocab);
  if (int64_t{p.num_rows} * p.vocab <= kTopkStageCap) {  // one block reads it all once (a small beam step)
    const int32_t cap = p.num_rows * p.vocab;
    const size_t bytes = detail::topk_shared_bytes(cap, p.k);
    detail::allow_dynamic_shared(reinterpret_cast<const void*>(&topk_single_kernel), bytes, "topk_candidates (cuda): single kernel");
    topk_single_kernel<<<1, kThreads, bytes, stream>>>(p, flat_bits, cap);
    TS_CUDA_CHECK_LAUNCH("topk_single_kernel");
    return;
  }
  // Each block keeps its candidates in shared memory between radix passes:
  // up to kTopkStageCap entries of a chunk or of the merge (a wider one is re-read each pass).
  const int32_t chunk_cap = std::min(row_chunk_width(p.vocab, chunks), kTopkStageCap);
  const int32_t merge_cap = static_cast<int32_t>(std::min<int64_t>(entries, kTopkStageCap));
  const size_t chunk_bytes = detail::topk_shared_bytes(chunk_cap, p.k), merge_bytes = detail::topk_shared_bytes(merge_cap, p.k);
  detail::allow_dynamic_shared(reinterpret_cast<const void*>(&topk_chunk_kernel), chunk_bytes, "topk_candidates (cuda): chunk kernel");
  detail::allow_dynamic_shared(reinterpret_cast<const void*>(&topk_merge_kernel), merge_bytes, "topk_candidates (cuda): merge kernel");
  topk_chunk_kernel<<<static_cast<unsigned>(p.num_rows * chunks), kThreads, chunk_bytes, stream>>>(p, chunks, flat_bits, chunk_cap);
  TS_CUDA_CHECK_LAUNCH("topk_chunk_kernel");
  topk_merge_kernel<<<1, kThreads, merge_bytes, stream>>>(p, static_cast<int32_t>(entries), flat_bits, merge_cap);
  TS_CUDA_CHECK_LAUNCH("topk_merge_kernel");
}

}  // namespace triescope::cuda
