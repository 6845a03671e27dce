// CPU twin: core/model/synthetic_model.h (synthetic_logits_fixed, SyntheticModel::forward)
#include "cuda/synthetic_logits.cuh"
#include "cuda/detail/device_status.h"
#include "cuda/detail/launch_shape.h"

namespace triescope::cuda {

namespace {

// splitmix64 finaliser, written again from its definition (the CPU twin keeps
// its own copy: a reference must not share code with what it checks).
__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
constexpr uint64_t kTok = 0x100000001b3ull, kPos = 0xc2b2ae3d27d4eb4full, kRel = 0x165667b19e3779f9ull;
constexpr unsigned kThreads = 256;

// The live (query, slot) counts: from device memory when a captured launch
// carries them (maybe_sizes), else the launch's own.
__device__ int32_t live_queries(const int32_t* maybe_sizes, int32_t num_queries) { return maybe_sizes ? maybe_sizes[0] : num_queries; }
__device__ int32_t live_slots(const int32_t* maybe_sizes, int32_t num_slots) { return maybe_sizes ? maybe_sizes[1] : num_slots; }

__global__ void synthetic_kv_write_kernel(SyntheticKvWriteParams p) {
  const int32_t n = live_queries(p.maybe_sizes, p.num_queries), num_slots = live_slots(p.maybe_sizes, p.num_slots);
  for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int32_t s = p.slots[i];
    if (s < 0 || s >= num_slots) {
      detail::status_report(p.maybe_status, KernelError::slot_out_of_range, i, s);
      continue;
    }
    p.kv_tokens[s] = p.tokens[i];
    p.kv_positions[s] = p.positions[i];
  }
}

// One block per query. Both context sums are wrapping uint64 additions, so
// their order does not matter and a tree reduction equals the CPU's loop.
// Query q's two hashes of what it reads: over every visible (token,
// position) pair (full) and over the pairs within ngram positions (local),
// summed over the block (every thread gets both). report: name bad slots.
struct QueryHashes {
  uint64_t full, local;
};
__device__ QueryHashes query_hashes(const SyntheticLogitsParams& p, int32_t q, bool report, uint64_t* s_full, uint64_t* s_local) {
  const SyntheticLogitsConfig& cfg = p.cfg;
  const int32_t num_slots = live_slots(p.maybe_sizes, p.num_slots);
  const int32_t used_words = (num_slots + 63) / 64;
  const uint64_t* row = p.mask + static_cast<size_t>(q) * static_cast<size_t>(p.words_per_row);
  const int32_t qpos = p.query_positions[q];
  uint64_t full = 0, local = 0;
  for (int32_t w = threadIdx.x; w < p.words_per_row; w += blockDim.x) {
    uint64_t bits = row[w];
    if (w >= used_words || (w == used_words - 1 && (num_slots & 63) != 0 && (bits >> (num_slots & 63)) != 0)) {
      if (bits && report) detail::status_report(p.maybe_status, KernelError::slot_out_of_range, q, w * 64 + 63 - __clzll(bits));
      if (w >= used_words) continue;
      bits &= (uint64_t{1} << (num_slots & 63)) - 1;
    }
    for (; bits; bits &= bits - 1) {
      const int32_t s = w * 64 + (__ffsll(static_cast<long long>(bits)) - 1);
      const int32_t tok = p.kv_tokens[s];
      if (tok < 0) {
        if (report) detail::status_report(p.maybe_status, KernelError::empty_slot, q, s);
        continue;
      }
      const int32_t pos = p.kv_positions[s];
      const uint64_t t = static_cast<uint32_t>(tok), pp = static_cast<uint32_t>(pos);
      full += mix64(cfg.seed ^ (t * kTok) ^ (pp * kPos));
      const int64_t rel = static_cast<int64_t>(qpos) - pos;
      if (rel >= 0 && rel < cfg.ngram) local += mix64((cfg.seed * 31u) ^ (t * kTok) ^ (static_cast<uint64_t>(rel) * kRel));
    }
  }
  s_full[threadIdx.x] = full;
  s_local[threadIdx.x] = local;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      s_full[threadIdx.x] += s_full[threadIdx.x + stride];
      s_local[threadIdx.x] += s_local[threadIdx.x + stride];
    }
    __syncthreads();
  }
  const QueryHashes h{s_full[0], s_local[0]};
  __syncthreads();  // the shared arrays are reused by the caller's next query
  return h;
}

// Block (query q, vocabulary chunk c): the chunk's fixed-point logits.
__global__ void __launch_bounds__(kThreads) synthetic_logits_kernel(SyntheticLogitsParams p, int32_t chunks, int32_t chunk_width) {
  __shared__ uint64_t s_full[kThreads];
  __shared__ uint64_t s_local[kThreads];
  const SyntheticLogitsConfig& cfg = p.cfg;
  const int32_t q = static_cast<int32_t>(blockIdx.x) / chunks, c = static_cast<int32_t>(blockIdx.x) % chunks;
  if (q >= live_queries(p.maybe_sizes, p.num_queries)) return;  // a padded query: the whole block leaves
  const QueryHashes qh = query_hashes(p, q, c == 0, s_full, s_local);
  const uint64_t full = qh.full, local = qh.local;
  const int64_t r = cfg.repetitiveness_q8;
  int32_t* out_fixed = p.maybe_out_fixed ? p.maybe_out_fixed + static_cast<size_t>(q) * cfg.vocab_size : nullptr;
  float* out_logits = p.maybe_out_logits ? p.maybe_out_logits + static_cast<size_t>(q) * cfg.vocab_size : nullptr;
  const int32_t end = min(cfg.vocab_size, (c + 1) * chunk_width);
  for (int32_t v = c * chunk_width + static_cast<int32_t>(threadIdx.x); v < end; v += blockDim.x) {
    const uint64_t vv = static_cast<uint64_t>(v) * 0x9e3779b97f4a7c15ull;
    const int64_t raw_full = static_cast<int64_t>(mix64(full ^ vv) & 0xffff);
    const int64_t raw_local = static_cast<int64_t>(mix64(local ^ vv ^ 0x5bd1e995ull) & 0xffff);
    int64_t base = (raw_local * r + raw_full * (256 - r)) >> 8;
    base += static_cast<int64_t>(mix64(full ^ vv ^ 0xabcdefull) & 0x3);
    if (cfg.perturb_q8 != 0)
      base += ((static_cast<int64_t>(mix64(full ^ vv ^ cfg.perturb_seed) & 0xffff) - 32768) * cfg.perturb_q8) >> 8;
    const int32_t fixed = static_cast<int32_t>((base * cfg.peakiness_q8) >> 8);
    if (out_fixed) out_fixed[v] = fixed;
    if (out_logits) out_logits[v] = static_cast<float>(fixed) * (1.0f / 4096.0f);
  }
}

// Block per query, after every chunk is written: the EOS logit, which is the
// row's maximum plus one logit unit when the query's hash hits, else the floor.
// The maximum is read back from the row just written (exact: fixed-point
// values below 2^24 are exact as float x 4096).
__global__ void __launch_bounds__(kThreads) synthetic_eos_kernel(SyntheticLogitsParams p) {
  __shared__ uint64_t s_full[kThreads];
  __shared__ uint64_t s_local[kThreads];
  __shared__ int32_t s_max[kThreads];
  const SyntheticLogitsConfig& cfg = p.cfg;
  const int32_t q = static_cast<int32_t>(blockIdx.x);
  if (q >= live_queries(p.maybe_sizes, p.num_queries)) return;  // a padded query: the whole block leaves
  const uint64_t full = query_hashes(p, q, false, s_full, s_local).full;
  const int32_t* out_fixed = p.maybe_out_fixed ? p.maybe_out_fixed + static_cast<size_t>(q) * cfg.vocab_size : nullptr;
  const float* out_logits = p.maybe_out_logits ? p.maybe_out_logits + static_cast<size_t>(q) * cfg.vocab_size : nullptr;
  int32_t best = INT32_MIN;
  for (int32_t v = threadIdx.x; v < cfg.vocab_size; v += blockDim.x)
    best = max(best, out_fixed ? out_fixed[v] : static_cast<int32_t>(out_logits[v] * 4096.0f));
  s_max[threadIdx.x] = best;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s_max[threadIdx.x] = max(s_max[threadIdx.x], s_max[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const bool hit = static_cast<int64_t>(mix64(full ^ 0xe05e05ull) % 1000000u) < cfg.eos_per_million;
    const int32_t e = hit ? s_max[0] + 4096 : 0;  // top by one logit unit, or at the floor
    if (p.maybe_out_fixed) p.maybe_out_fixed[static_cast<size_t>(q) * cfg.vocab_size + cfg.eos_token] = e;
    if (p.maybe_out_logits) p.maybe_out_logits[static_cast<size_t>(q) * cfg.vocab_size + cfg.eos_token] = static_cast<float>(e) * (1.0f / 4096.0f);
  }
}

}  // namespace

void synthetic_kv_write(const SyntheticKvWriteParams& p, cudaStream_t stream) {
  TS_CHECK(p.num_queries >= 0 && p.num_slots >= 0, "synthetic_kv_write (cuda): negative size");
  if (p.num_queries == 0) return;
  synthetic_kv_write_kernel<<<detail::blocks_for(p.num_queries, 128), 128, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("synthetic_kv_write_kernel");
}

void synthetic_logits(const SyntheticLogitsParams& p, cudaStream_t stream) {
  TS_CHECK(p.cfg.vocab_size >= 2, "synthetic_logits (cuda): vocab_size must be >= 2, got " << p.cfg.vocab_size);
  TS_CHECK(p.cfg.eos_token < p.cfg.vocab_size, "synthetic_logits (cuda): eos_token " << p.cfg.eos_token << " >= vocab_size");
  TS_CHECK(p.cfg.ngram >= 1, "synthetic_logits (cuda): ngram must be >= 1");
  TS_CHECK(p.num_queries >= 0 && p.num_slots >= 0, "synthetic_logits (cuda): negative size");
  TS_CHECK(int64_t{p.words_per_row} * 64 >= p.num_slots,
           "synthetic_logits (cuda): words_per_row " << p.words_per_row << " too small for " << p.num_slots << " slots");
  if (p.num_queries == 0) return;
  // Each query's vocabulary in chunks of at least 2,048 entries that fill the
  // chip; each chunk re-derives the query's hashes from its mask row (a few
  // hundred visible slots).
  const int32_t chunks = detail::chunks_to_fill(p.num_queries, p.cfg.vocab_size, 2048);
  const auto width = static_cast<int32_t>((p.cfg.vocab_size + chunks - 1) / chunks);
  TS_CHECK(int64_t{p.num_queries} * chunks <= INT32_MAX, "synthetic_logits (cuda): " << p.num_queries << " queries are too many");
  synthetic_logits_kernel<<<static_cast<unsigned>(p.num_queries * chunks), kThreads, 0, stream>>>(p, chunks, width);
  TS_CUDA_CHECK_LAUNCH("synthetic_logits_kernel");
  if (p.cfg.eos_token >= 0 && (p.maybe_out_fixed || p.maybe_out_logits)) {
    synthetic_eos_kernel<<<static_cast<unsigned>(p.num_queries), kThreads, 0, stream>>>(p);
    TS_CUDA_CHECK_LAUNCH("synthetic_eos_kernel");
  }
}

}  // namespace triescope::cuda
