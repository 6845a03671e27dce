// The arithmetic of cuda/tree_attention.cu that does not need a GPU, shared
// by the kernel and a CPU emulation of its block/warp/split decomposition
// (tests/cuda/twin_cases_tree_attention.cpp), so the work split, the head
// mapping and the online-softmax merges are checked here against the CPU
// twin even where no device exists. Plain C++ for g++, __host__ __device__
// under nvcc.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TS_TA_HD __host__ __device__ __forceinline__
#else
#define TS_TA_HD inline
#endif

namespace triescope::cuda::ta {

// Warps per block; warp w of a block walks entries lo + w, lo + w + kWarps, ...
inline constexpr int kWarps = 4;

// Entries [lo, hi) of a query's list (CSR positions [beg, end)) that split
// `split` of `splits` covers. The last split runs to `end`, so a max_row that
// undercounts costs balance, never entries.
struct Range {
  int32_t lo, hi;
};
TS_TA_HD Range split_range(int32_t beg, int32_t end, int32_t split, int32_t splits, int32_t chunk) {
  const int32_t lo = beg + split * chunk;
  const int32_t hi = split == splits - 1 ? end : (end < lo + chunk ? end : lo + chunk);
  return {lo, hi};
}

// Query heads of block row y: KV head kvh, first query head h0, nh heads.
struct Heads {
  int32_t kvh, h0, nh;
};
TS_TA_HD Heads block_heads(int32_t y, int32_t head_groups, int32_t heads_per_block, int32_t group) {
  const int32_t kvh = y / head_groups, hg = y % head_groups;
  const int32_t left = group - hg * heads_per_block;
  return {kvh, kvh * group + hg * heads_per_block, left < heads_per_block ? left : heads_per_block};
}

// One online-softmax step: the running max m moves to max(m, s); the old sums
// are scaled by corr and the new entry weighs p (both relative to the new max).
struct Step {
  float m_new, corr, p;
};
TS_TA_HD Step online_step(float m, float s) {
  const float m_new = fmaxf(m, s);
  return {m_new, expf(m - m_new), expf(s - m_new)};  // corr = 0 for the first entry (m = -inf)
}

// Weight of a partial state with max m_part when merged under the common max
// M: 0 for a part that saw no entry (m_part = -inf) or when none did.
TS_TA_HD float merge_factor(float m_part, float M) { return M == -INFINITY ? 0.0f : expf(m_part - M); }

// Normalised output; an empty list gives 0 (the twin's convention).
TS_TA_HD float finish(float acc, float l) { return l > 0.0f ? acc / l : 0.0f; }

}  // namespace triescope::cuda::ta
