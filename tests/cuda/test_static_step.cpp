// The fused STATIC step on the device (cuda/static/static_step.cuh via
// cuda::StaticStepCuda) beyond one step's twin comparison (that is
// twin_cases_static.cpp): graph replay with the device advancing the beams
// itself, walked against the full-vocabulary path (core's log_softmax_row +
// dense_lookup / vntk_sparse + topk_candidates per group +
// static_next_state), scores within 1e-12 relative (the log-normalisers sum
// the same exponentials in different orders); and bad states and steps
// reported by name.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"
#include "cuda/static/static_constraint_cuda.h"
#include "device_util.h"
#include "test_util.h"

using namespace triescope;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-12 * (1.0 + std::abs(b)); }

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { TS_CUDA_CHECK(cudaStreamCreate(&s), "test stream"); }
  ~Stream() { cudaStreamDestroy(s); }
};

}  // namespace

TEST_CASE("cuda static step: graph replay with advance walks the beams like the CPU", "[cuda][constraint]") {
  const CsrLayout layout = GENERATE(CsrLayout::stacked, CsrLayout::compact);
  const int32_t d = GENERATE(0, 2);
  const uint64_t seed = testing::test_seed(77 + static_cast<uint64_t>(d) * 2 + (layout == CsrLayout::compact));
  CAPTURE(testing::base_seed(), seed, csr_layout_name(layout), d);
  std::mt19937_64 rng(seed);
  const int32_t V = 256, L = 5, M = 8, groups = 2, n = groups * M, k = 2 * M;
  const ConstraintSet c = constraint_set_random(5000, L, V, rng());
  const TransitionMatrix tm = TransitionMatrix::build(c, {d, layout});
  const cuda::DeviceTransitionMatrix dm(tm);
  Stream stream;
  cuda::StaticStepCuda st(dm, n, groups, k, stream.s);
  std::normal_distribution<float> g(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(n) * V);
  for (auto& x : logits) x = g(rng);
  const auto d_logits = testing::upload(logits);
  std::vector<int64_t> states(static_cast<size_t>(n), 0);
  std::vector<double> scores(static_cast<size_t>(n), 0.0);
  for (int32_t i = 1; i < M; ++i) scores[static_cast<size_t>(i)] = scores[static_cast<size_t>(M + i)] = -std::numeric_limits<double>::infinity();
  for (int32_t i = 1; i < M; ++i) states[static_cast<size_t>(i)] = states[static_cast<size_t>(M + i)] = kDeadState;  // one live beam per group
  st.reset(states, scores, 0);
  for (int32_t t = 0; t < L; ++t) {
    CAPTURE(t);
    st.graph_launch(d_logits.data(), false, true);
    st.check("static step advance");
    const cuda::StaticStepHost h = st.download(false);
    // CPU: the same step, then the first M candidates of each group become its beams.
    std::vector<double> lp(logits.size());
    for (int32_t i = 0; i < n; ++i) log_softmax_row(logits.data() + static_cast<size_t>(i) * V, V, lp.data() + static_cast<size_t>(i) * V);
    if (t < d) dense_lookup(tm, states.data(), n, t, lp.data(), nullptr);
    else vntk_sparse<double>(tm, states.data(), n, t, lp.data(), nullptr, nullptr, nullptr);
    std::vector<int64_t> next(static_cast<size_t>(n), kDeadState);
    std::vector<double> next_scores(static_cast<size_t>(n), -std::numeric_limits<double>::infinity());
    for (int32_t gi = 0; gi < groups; ++gi) {
      const auto want = topk_candidates(lp.data() + static_cast<size_t>(gi) * M * V, M, V, scores.data() + static_cast<size_t>(gi) * M, k);
      for (int32_t j = 0; j < M && j < static_cast<int32_t>(want.size()); ++j) {
        const int64_t flat = want[static_cast<size_t>(j)].flat + int64_t{gi} * M * V;
        next[static_cast<size_t>(gi) * M + j] = static_next_state(tm, states[static_cast<size_t>(flat / V)], static_cast<int32_t>(flat % V), t);
        next_scores[static_cast<size_t>(gi) * M + j] = want[static_cast<size_t>(j)].score;
        CHECK(h.top_flat[static_cast<size_t>(gi) * k + j] == flat);
      }
    }
    CHECK(h.states == next);
    for (int32_t i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK((std::isinf(next_scores[static_cast<size_t>(i)]) ? h.beam_scores[static_cast<size_t>(i)] == next_scores[static_cast<size_t>(i)]
                                                              : close(h.beam_scores[static_cast<size_t>(i)], next_scores[static_cast<size_t>(i)])));
    }
    CHECK(h.step == t + 1);
    states = next;
    scores = h.beam_scores;  // carry the device's scores (equal within tolerance) so ids stay comparable
  }
  CHECK(st.graphs_captured() == 1);
  // After L steps every live beam holds a complete id of C.
  for (int64_t s : states)
    if (s != kDeadState) CHECK(tm.level_of(s) == L);
}

TEST_CASE("cuda static step: bad states and steps are reported by name", "[cuda][constraint]") {
  const ConstraintSet c = constraint_set_random(300, 4, 32, 3);
  const TransitionMatrix tm = TransitionMatrix::build(c, {1, CsrLayout::compact});
  const cuda::DeviceTransitionMatrix dm(tm);
  Stream stream;
  cuda::StaticStepCuda st(dm, 4, 1, 4, stream.s);
  std::vector<float> logits(4 * 32, 0.5f);
  const auto d_logits = testing::upload(logits);
  st.reset({0, 0, 0, 0}, {0, 0, 0, 0}, 0);
  st.poke_state(2, tm.num_states() + 5);
  st.launch(d_logits.data(), true, false);
  CHECK_THROWS_WITH(st.check("bad state"), Catch::Contains("constraint state out of range") && Catch::Contains("bad state"));
  const auto h = st.download(true);
  CHECK(h.valid[2] == 0);  // the bad row is treated as dead
  st.reset({0, 0, 0, 0}, {0, 0, 0, 0}, 0);
  st.poke_step(4);  // step == L
  st.launch(d_logits.data(), false, false);
  CHECK_THROWS_WITH(st.check("bad step"), Catch::Contains("constraint step out of range"));
  st.poke_step(-1);
  st.launch(d_logits.data(), false, false);
  CHECK_THROWS_WITH(st.check("negative step"), Catch::Contains("constraint step out of range"));
  CHECK_THROWS_WITH(cuda::StaticStepCuda(dm, 5, 2, 1, stream.s), Catch::Contains("do not split into 2 groups"));
  CHECK_THROWS_WITH(cuda::StaticStepCuda(dm, 4, 1, 4 * 32 + 1, stream.s), Catch::Contains("k = 129"));
}
