// The selection kernels before the radix select (commit 9ae4cdc), for
// bench_cuda's old-vs-new runs: the same parameters as cuda/topk_candidates.cuh
// and cuda/static/static_step.cuh. The workspaces they need are smaller than
// the new kernels' (rows x k), so the new sizes serve both. Their definitions
// are 9ae4cdc's own files, taken from the git history at configure time
// (bench/legacy_selection.cmake); the repository holds no copy.
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/static/static_step.cuh"
#include "cuda/topk_candidates.cuh"

namespace triescope::bench::legacy {

void topk_candidates(const cuda::TopkCandidatesParams& p, cudaStream_t stream);
void static_step(const cuda::StaticStepParams& p, cudaStream_t stream);

}  // namespace triescope::bench::legacy
