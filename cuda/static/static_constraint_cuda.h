// Host side of the fused STATIC step (cuda/static/static_step.cuh): the
// TransitionMatrix uploaded once (DeviceTransitionMatrix), and a stepper that
// owns the beams' device state (states, scores, step, workspace, outputs) and
// runs a step either as two plain launches or as a CUDA graph captured once
// per shape and replayed.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/constraint/transition_matrix.h"
#include "cuda/cuda_common.cuh"
#include "cuda/static/static_step.cuh"
#include "cuda/static/static_step_index.h"

namespace triescope::cuda {

// The matrix's sizes and layout flags, no arrays: shared by the device view
// (DeviceTransitionMatrix) and the host view.
StaticMatrixView static_matrix_scalars(const TransitionMatrix& tm);
// The view over `tm`'s own host arrays: what the host runs of the kernels'
// row logic (and their CPU tests) read.
StaticMatrixView static_matrix_host_view(const TransitionMatrix& tm);

class DeviceTransitionMatrix {
 public:
  explicit DeviceTransitionMatrix(const TransitionMatrix& tm);
  const StaticMatrixView& view() const { return view_; }
  // Device bytes of the matrix arrays (row pointers, edges/tokens, dense masks,
  // state tables or rank directories, level starts, branch factors).
  int64_t bytes() const;

 private:
  StaticMatrixView view_;  // its array pointers point into arrays_
  std::vector<DeviceBuffer<std::byte>> arrays_;  // one per non-empty matrix array, each its exact bytes
};

// What a step produced, copied to the host.
struct StaticStepHost {
  std::vector<double> masked_logprobs;  // [n x V] (empty unless the step wrote them)
  std::vector<int32_t> valid;           // [n]
  std::vector<double> top_score;        // [groups x k]
  std::vector<int64_t> top_flat;        // [groups x k]
  std::vector<int64_t> top_next;        // [groups x k]
  std::vector<int32_t> top_count;       // [groups]
  std::vector<int64_t> states;          // [n] after the step (advanced when asked)
  std::vector<double> beam_scores;      // [n]
  int32_t step = 0;
};

class StaticStepCuda {
 public:
  // The launcher of one step: static_step, or a baseline with the same
  // parameters (bench_cuda times the kernels it replaced this way).
  using StepLauncher = void (*)(const StaticStepParams&, cudaStream_t);
  // n rows in `groups` groups, k candidates per group.
  StaticStepCuda(const DeviceTransitionMatrix& matrix, int32_t n, int32_t groups, int32_t k, cudaStream_t stream = nullptr,
                 StepLauncher launcher = &static_step);
  ~StaticStepCuda();
  StaticStepCuda(const StaticStepCuda&) = delete;
  StaticStepCuda& operator=(const StaticStepCuda&) = delete;

  // Uploads the beams' states, scores and the step index (synchronously).
  void reset(const std::vector<int64_t>& states, const std::vector<double>& beam_scores, int32_t step);
  // One step over device logits [n x V]: kStaticStepKernels launches.
  void launch(const float* logits_dev, bool write_masked, bool advance);
  // The same step as a CUDA graph, captured on first use for (logits, flags)
  // and replayed after (one cudaGraphLaunch per step).
  void graph_launch(const float* logits_dev, bool write_masked, bool advance);
  int32_t graphs_captured() const { return static_cast<int32_t>(graphs_.size()); }
  // Synchronises, throws a named Error if a kernel flagged bad input.
  void check(const char* what);
  StaticStepHost download(bool masked);
  // Bad-input testing: overwrite one row's state / the step index on the device.
  void poke_state(int32_t row, int64_t state);
  void poke_step(int32_t step);
  // Poisons the outputs and workspace (0xa5 bytes) so a kernel that skips one cannot pass.
  void poison();

  int32_t rows() const { return n_; }
  int32_t groups() const { return groups_; }
  int32_t k() const { return k_; }
  cudaStream_t stream() const { return stream_; }

 private:
  StaticStepParams params(const float* logits_dev, bool write_masked, bool advance);
  const DeviceTransitionMatrix& matrix_;
  int32_t n_, groups_, k_;
  cudaStream_t stream_;
  StepLauncher launcher_;
  DeviceBuffer<int64_t> states_, ws_flat_, ws_next_, out_flat_, out_next_;
  DeviceBuffer<double> scores_, masked_, ws_score_, out_score_;
  DeviceBuffer<int32_t> step_, valid_, out_count_;
  DeviceBuffer<KernelStatus> status_;
  std::map<std::tuple<const float*, bool, bool>, cudaGraphExec_t> graphs_;
};

}  // namespace triescope::cuda
