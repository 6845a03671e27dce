// Device-side half of KernelStatus (cuda_common.cuh): included by .cu files
// only. The first error wins; later ones are dropped.
#pragma once
#ifndef __CUDACC__
#error "cuda/detail/device_status.h is for .cu files"
#endif
#include "cuda/cuda_common.cuh"

namespace triescope::cuda::detail {

__device__ inline void status_report(KernelStatus* s, KernelError e, int32_t a, int32_t b) {
  if (s == nullptr) return;
  if (atomicCAS(&s->code, 0, static_cast<int32_t>(e)) == 0) {
    s->a = a;
    s->b = b;
  }
}

inline unsigned blocks_for(long long n, unsigned threads) {
  const long long b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535LL * 32 ? 65535LL * 32 : b));
}

}  // namespace triescope::cuda::detail
