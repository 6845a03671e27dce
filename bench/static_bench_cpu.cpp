#include "bench/static_bench_cpu.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "core/common/error.h"
#include "core/constraint/static_step.h"
#include "core/constraint/vntk.h"
#ifdef TRIESCOPE_BENCH_TORCH
#include "bench/static_listing_torch.h"
#endif

namespace triescope::bench {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int32_t> steps_of(const StaticProblem& p, int32_t only_step) {
  if (only_step >= 0) return {only_step};
  std::vector<int32_t> s;
  for (int32_t t = 0; t < p.tm.length; ++t) s.push_back(t);
  return s;
}

}  // namespace

ConstraintSet static_bench_set(int64_t items, int32_t length, int32_t vocab) { return constraint_set_random(items, length, vocab, kStaticSetSeed); }

StaticProblem static_problem(const ConstraintSet& set, int32_t dense_levels, CsrLayout layout, int32_t rows, uint64_t seed) {
  StaticProblem p;
  const auto t0 = Clock::now();
  p.tm = TransitionMatrix::build(set, {dense_levels, layout});
  p.build_s = std::chrono::duration<double>(Clock::now() - t0).count();
  p.rows = rows;
  const int32_t V = set.vocab_size, L = set.length;
  std::mt19937_64 rng(seed);
  std::vector<const int32_t*> items;
  for (int32_t r = 0; r < rows; ++r) items.push_back(set.item(static_cast<int64_t>(rng() % static_cast<uint64_t>(set.size()))));
  p.states.assign(static_cast<size_t>(L), std::vector<int64_t>(static_cast<size_t>(rows)));
  for (int32_t r = 0; r < rows; ++r) {
    int64_t s = 0;
    for (int32_t t = 0; t < L; ++t) {
      p.states[static_cast<size_t>(t)][static_cast<size_t>(r)] = s;
      s = static_next_state(p.tm, s, items[static_cast<size_t>(r)][t], t);
    }
  }
  std::normal_distribution<float> g(0.0f, 3.0f);
  p.logits.resize(static_cast<size_t>(rows) * static_cast<size_t>(V));
  for (auto& x : p.logits) x = g(rng);
  return p;
}

double static_cpu_step_ms(const StaticProblem& p, int32_t groups, int32_t k, int reps, int32_t only_step) {
  const int32_t n = p.rows;
  TS_CHECK(n % groups == 0, "bench: rows do not split into groups");
  const std::vector<double> scores(static_cast<size_t>(n), 0.0);
  StaticStep step(p.tm);
  StaticStepResult r;
  int64_t sink = 0;
  std::vector<double> ms;
  const auto steps = steps_of(p, only_step);
  for (int rep = 0; rep < std::max(1, reps); ++rep) {
    const auto t0 = Clock::now();
    for (int32_t t : steps) {
      step.run(p.logits.data(), p.states[static_cast<size_t>(t)].data(), scores.data(), n, groups, k, t, r);
      sink += r.next[0];
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / static_cast<double>(steps.size()));
  }
  if (sink == 42) std::printf(" ");  // keep the work observable
  return median(ms);
}

double static_listing_torch_step_ms(const StaticProblem& p, const std::string& device, int32_t groups, int32_t k, int reps, std::string* why,
                            int64_t* device_bytes, int32_t only_step) {
#ifdef TRIESCOPE_BENCH_TORCH
  if (!StaticListingTorch::device_usable(device, why)) return -1.0;
  StaticListingTorch ts(p.tm, device);
  if (device_bytes) *device_bytes = ts.device_bytes();
  const int32_t n = p.rows;
  const std::vector<double> scores(static_cast<size_t>(n), 0.0);
  const auto steps = steps_of(p, only_step);
  // warm-up (CUDA context, allocator)
  ts.set_inputs(p.logits.data(), n, p.states[static_cast<size_t>(steps[0])].data(), scores.data());
  ts.run(steps[0], groups, k);
  ts.synchronize();
  std::vector<double> ms;
  for (int rep = 0; rep < std::max(1, reps); ++rep) {
    double total = 0.0;
    for (int32_t t : steps) {
      ts.set_inputs(p.logits.data(), n, p.states[static_cast<size_t>(t)].data(), scores.data());  // not timed: the model's output
      ts.synchronize();
      const auto t0 = Clock::now();
      ts.run(t, groups, k);
      ts.synchronize();
      total += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
    ms.push_back(total / static_cast<double>(steps.size()));
  }
  return median(ms);
#else
  (void)p, (void)device, (void)groups, (void)k, (void)reps, (void)device_bytes, (void)only_step;
  if (why) *why = "built without LibTorch (TRIESCOPE_WITH_TORCH off)";
  return -1.0;
#endif
}

}  // namespace triescope::bench
