// The GPU benchmarks' clock: median milliseconds, by CUDA events on the
// default stream, of `reps` runs of `fn` after one warm-up run.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/cuda_common.cuh"

namespace triescope::bench {

template <typename F>
double cuda_median_ms(int reps, F&& fn) {
  cudaEvent_t a, b;
  TS_CUDA_CHECK(cudaEventCreate(&a), "bench: event");
  TS_CUDA_CHECK(cudaEventCreate(&b), "bench: event");
  fn();
  TS_CUDA_CHECK(cudaDeviceSynchronize(), "bench: warm-up");
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    TS_CUDA_CHECK(cudaEventRecord(a), "bench: record");
    fn();
    TS_CUDA_CHECK(cudaEventRecord(b), "bench: record");
    TS_CUDA_CHECK(cudaEventSynchronize(b), "bench: sync");
    float t = 0;
    TS_CUDA_CHECK(cudaEventElapsedTime(&t, a, b), "bench: elapsed");
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace triescope::bench
