// CPU-side pieces of the STATIC constraint-step benchmarks, compiled by g++
// and called from bench_cuda.cu (nvcc, C++17: this header includes no C++20
// core header): the random constraint set (uniform SIDs, bench_constraint's
// seed), the matrix build, the beams' per-step states, the CPU reference step
// and the step of the paper's Algorithm 2 listing in LibTorch on a device.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/constraint/transition_matrix.h"

namespace triescope::bench {

inline constexpr uint64_t kStaticSetSeed = 20260224;  // bench_constraint's set seed

ConstraintSet static_bench_set(int64_t items, int32_t length, int32_t vocab);

struct StaticProblem {
  TransitionMatrix tm;
  int32_t rows = 0;
  std::vector<float> logits;                // [rows x V], N(0, 3)
  std::vector<std::vector<int64_t>> states; // [L][rows]: row r at step t holds the first t tokens of a random item
  double build_s = 0.0;
};
// Throws triescope::Error when the matrix cannot be built (App. B limits).
StaticProblem static_problem(const ConstraintSet& set, int32_t dense_levels, CsrLayout layout, int32_t rows, uint64_t seed);

// CPU step (core/constraint/static_step.h: the whole step, candidates-only
// ranking, one thread): milliseconds per step, mean over steps t = 0 .. L-1 (or only `only_step`),
// median of `reps` passes.
double static_cpu_step_ms(const StaticProblem& p, int32_t groups, int32_t k, int reps, int32_t only_step = -1);

// The Algorithm 2 listing in LibTorch (bench/static_listing_torch.h) on `device`, same
// steps and timing (wall clock, synchronised after every step). Returns < 0
// with `why` when this build has no LibTorch or the device is unusable.
double static_listing_torch_step_ms(const StaticProblem& p, const std::string& device, int32_t groups, int32_t k, int reps, std::string* why,
                            int64_t* device_bytes, int32_t only_step = -1);

}  // namespace triescope::bench
