// Device-side pieces of the top-k candidate selection, shared by
// beam_select.cu (topk_candidates) and static_step.cu (the fused STATIC step):
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
  int aux;  // no default initialiser: Cand lives in __shared__ arrays (aggregate init zeroes it)
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

}  // namespace triescope::cuda::detail
