// The GPU benchmarks' clock: median milliseconds by CUDA events, of `reps`
// runs after one warm-up run: of a function on the default stream, of two
// functions interleaved rep by rep, or of a function captured once as a CUDA
// graph and replayed.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "cuda/cuda_common.cuh"

namespace triescope::bench {

// Times one call of fn between two events on `stream`.
class EventClock {
 public:
  EventClock() {
    TS_CUDA_CHECK(cudaEventCreate(&a_), "bench: event");
    TS_CUDA_CHECK(cudaEventCreate(&b_), "bench: event");
  }
  ~EventClock() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  EventClock(const EventClock&) = delete;
  EventClock& operator=(const EventClock&) = delete;
  template <typename F>
  double ms(F&& fn, cudaStream_t stream = nullptr) {
    TS_CUDA_CHECK(cudaEventRecord(a_, stream), "bench: record");
    fn();
    TS_CUDA_CHECK(cudaEventRecord(b_, stream), "bench: record");
    TS_CUDA_CHECK(cudaEventSynchronize(b_), "bench: sync");
    float t = 0;
    TS_CUDA_CHECK(cudaEventElapsedTime(&t, a_, b_), "bench: elapsed");
    return static_cast<double>(t);
  }

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double cuda_median_ms(int reps, F&& fn) {
  EventClock clock;
  fn();
  TS_CUDA_CHECK(cudaDeviceSynchronize(), "bench: warm-up");
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(clock.ms(fn));
  return median_of(ms);
}

// Medians of a and b on the default stream, their reps interleaved (a, b, a,
// b, ...) after one warm-up of each, so the two share the machine's state.
inline std::pair<double, double> cuda_interleaved_median_ms(int reps, const std::function<void()>& a, const std::function<void()>& b) {
  EventClock clock;
  std::vector<double> ta, tb;
  for (int rep = -1; rep < reps; ++rep) {
    const double x = clock.ms(a), y = clock.ms(b);
    if (rep < 0) continue;
    ta.push_back(x);
    tb.push_back(y);
  }
  return {median_of(ta), median_of(tb)};
}

// fn(stream) captured once as a CUDA graph on a fresh stream (after one
// plain warm-up call, so one-time work such as kernel attributes stays out
// of the capture), then replayed: the median of reps replays after one.
inline double cuda_graph_median_ms(int reps, const std::function<void(cudaStream_t)>& fn) {
  cudaStream_t stream = nullptr;
  TS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "bench: stream");
  fn(stream);
  TS_CUDA_CHECK(cudaStreamSynchronize(stream), "bench: warm-up");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  TS_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "bench: capture");
  fn(stream);
  TS_CUDA_CHECK(cudaStreamEndCapture(stream, &graph), "bench: capture");
  TS_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0), "bench: instantiate");
  std::vector<double> ms;
  {
    EventClock clock;
    for (int rep = -1; rep < reps; ++rep) {
      const double t = clock.ms([&] { TS_CUDA_CHECK(cudaGraphLaunch(exec, stream), "bench: graph launch"); }, stream);
      if (rep >= 0) ms.push_back(t);
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  return median_of(ms);
}

}  // namespace triescope::bench
