// Device-side pieces of the top-k candidate selection, shared by
// topk_candidates.cu (topk_candidates) and static_step.cu (the fused STATIC step):
// the candidate order and the block-wide best. .cu files only.
#pragma once
#ifndef __CUDACC__
#error "cuda/detail/topk_select.cuh is for .cu files"
#endif
#include <cstdint>

namespace triescope::cuda::detail {

// A candidate in the strict total order the CPU uses: higher score first,
// then lower flat index. flat < 0 marks "none". aux is a payload the order
// ignores (the fused step keeps the candidate's slice slot or workspace index).
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

}  // namespace triescope::cuda::detail
