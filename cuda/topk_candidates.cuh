// Beam selection on the device: log-softmax of logits rows and the top 2b
// (beam, token) candidates with the CPU's exact tie-break (score descending,
// then flat index beam * vocab + token ascending; torch.topk's order).
// CPU twins: log_softmax_row (core/select/log_normaliser.h) and
// topk_candidates (core/select/topk_candidates.h).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

// Each row is split into chunks so that a launch fills the chip whatever
// the row count: chunks of at least kRowChunkMin entries, about 264 blocks in
// all (two waves of an H100's or H200's 132 SMs; detail::chunks_to_fill).
// The split depends only on the sizes, never on the device, so results do not.
constexpr int32_t kRowChunkMin = 4096;
// Chunks per row for rows x vocab, and the entries of each (the last one shorter).
int32_t row_chunks(int32_t rows, int32_t vocab);
int32_t row_chunk_width(int32_t vocab, int32_t chunks);

// out[r] = log_softmax(logits[maybe_rows ? maybe_rows[r] : r]) in double.
// Agrees with the CPU within a stated tolerance, not bit for bit: exp/log
// differ in their last ulp between libm and CUDA, and the sum's order differs.
// Two launches of rows x row_chunks blocks: each chunk's (max, sum of
// exponentials), then each chunk's outputs from its row's log-normaliser.
struct LogSoftmaxParams {
  const float* logits = nullptr;        // [logits_rows x vocab]
  int32_t logits_rows = 0;
  int32_t vocab = 0;
  const int32_t* maybe_rows = nullptr;  // [num_rows] logits row feeding each output row
  int32_t num_rows = 0;
  double* out = nullptr;                // [num_rows x vocab]
  double* workspace = nullptr;          // [log_softmax_workspace_size(num_rows, vocab)]
  KernelStatus* maybe_status = nullptr;
};
int64_t log_softmax_workspace_size(int32_t num_rows, int32_t vocab);
void log_softmax_rows(const LogSoftmaxParams& p, cudaStream_t stream);

// The k best beam_scores[r] + logprobs[r][v] over finite logprobs (an
// infinite logprob is a token a constraint masked; NaN is never a candidate),
// best first. With maybe_logits, logprobs[r][v] is double(maybe_logits[r][v])
// - maybe_lse[r] (log_softmax_row's own subtraction, so with the host's
// log_softmax_lse the scores are the CPU's bit for bit; cuda/device_selector.h)
// and `logprobs` is not read. Two launches: the k best of each row chunk
// (rows x row_chunks blocks), then the k best of those (one block); or, when
// rows x vocab <= kTopkStageCap (a small beam step, read once into shared
// memory), one launch of one block over every row. Each is a block radix
// select (cuda/detail/topk_select.cuh): at most 8 + ceil(flat bits / 8)
// passes of 3 barriers, whatever k, then a rank by comparison counting.
constexpr int32_t kTopkMaxK = 1024;       // the ranking holds k candidates in shared memory
constexpr int32_t kTopkStageCap = 8192;   // merge entries kept in shared memory between passes (more are re-read)
struct TopkCandidatesParams {
  const double* logprobs = nullptr;     // [num_rows x vocab]
  const float* maybe_logits = nullptr;  // [num_rows x vocab] instead of logprobs, with maybe_lse
  const double* maybe_lse = nullptr;    // [num_rows] each row's log-normaliser
  const double* beam_scores = nullptr;  // [num_rows]
  int32_t num_rows = 0;
  int32_t vocab = 0;
  int32_t k = 0;                        // in [1, kTopkMaxK]
  double* workspace_score = nullptr;    // [topk_candidates_workspace_size(num_rows, vocab, k)]
  int64_t* workspace_flat = nullptr;    // [the same]
  double* out_score = nullptr;          // [k] best first
  int64_t* out_flat = nullptr;          // [k] r * vocab + v; -1 past out_count
  int32_t* out_count = nullptr;         // [1] candidates found (< k when too few are finite)
};
int64_t topk_candidates_workspace_size(int32_t num_rows, int32_t vocab, int32_t k);
void topk_candidates(const TopkCandidatesParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
