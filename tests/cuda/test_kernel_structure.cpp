// The structure of the selection kernels, counted by the host runtime
// (launch_stats(), cuda/host_runtime): launches per step, blocks per launch,
// and barrier rounds per block, the serial depth a GPU pays for. A design
// that ranks the k best by k rounds of a block reduction (the kernels before
// the radix select: k x 9 rounds per block) fails here without a GPU.
// Outputs are checked against the CPU twins too, so the counts belong to
// kernels that do the real work. Host runtime only (label cuda_emu).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "core/constraint/static_step.h"
#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"
#include "core/select/topk_candidates.h"
#include "cuda/static/static_constraint_cuda.h"
#include "cuda/static/static_step.cuh"
#include "cuda/topk_candidates.cuh"
#include "device_util.h"
#include "test_util.h"
#include "launch_stats_util.h"
#include "triescope_cuda_host/control.h"

using namespace triescope;
namespace host = triescope::cuda_host;
using triescope::testing::launches_of;

namespace {

int ceil_log2(int64_t n) {
  int b = 0;
  while ((int64_t{1} << b) < n) ++b;
  return b;
}

// block_topk's bound: one barrier to stage the candidates, 3 a radix pass (8
// over the score, then enough for the flat index), then 4 (threshold, the
// threshold bin gathered, picks, ranks): independent of k.
int select_rounds_bound(int64_t flat_bound) { return 1 + 3 * (8 + (ceil_log2(flat_bound) + 7) / 8) + 4; }

struct Sizes {
  int32_t rows, vocab, k;
};

// topk_candidates on rows x vocab log-probs drawn from `levels` values
// (levels = 1: every score of a row ties, the radix select's worst case).
void run_topk(const Sizes& z, int32_t levels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> lp(static_cast<size_t>(z.rows) * z.vocab), beam(static_cast<size_t>(z.rows));
  for (auto& x : lp) x = -0.25 * std::uniform_int_distribution<int32_t>(0, levels - 1)(rng) - 3.0;
  for (auto& b : beam) b = levels == 1 ? 0.0 : -0.5 * std::uniform_int_distribution<int32_t>(0, 3)(rng);
  const auto want = topk_candidates(lp.data(), z.rows, z.vocab, beam.data(), z.k);
  auto d_lp = testing::upload(lp), d_beam = testing::upload(beam);
  const auto entries = static_cast<size_t>(cuda::topk_candidates_workspace_size(z.rows, z.vocab, z.k));
  auto ws_s = testing::poisoned<double>(entries);
  auto ws_f = testing::poisoned<int64_t>(entries);
  auto out_s = testing::poisoned<double>(static_cast<size_t>(z.k));
  auto out_f = testing::poisoned<int64_t>(static_cast<size_t>(z.k));
  auto count = testing::poisoned<int32_t>(1);
  cuda::TopkCandidatesParams p;
  p.logprobs = d_lp.data();
  p.beam_scores = d_beam.data();
  p.num_rows = z.rows;
  p.vocab = z.vocab;
  p.k = z.k;
  p.workspace_score = ws_s.data();
  p.workspace_flat = ws_f.data();
  p.out_score = out_s.data();
  p.out_flat = out_f.data();
  p.out_count = count.data();
  cuda::topk_candidates(p, nullptr);
  REQUIRE(testing::download(count, 1)[0] == static_cast<int32_t>(want.size()));
  const auto flat = testing::download(out_f, static_cast<size_t>(z.k));
  const auto score = testing::download(out_s, static_cast<size_t>(z.k));
  for (size_t j = 0; j < want.size(); ++j) {
    CAPTURE(j);
    REQUIRE(flat[j] == want[j].flat);
    REQUIRE(score[j] == want[j].score);
  }
}

}  // namespace

TEST_CASE("selection structure: a beam step's top-2b is 2 launches whose depth grows with log(n), not with k", "[cuda_emu][structure]") {
  // The beam step (b = 15, |V| = 32,000, k = 30) and the same rows with k = 2 and k = 128.
  const int32_t k = GENERATE(2, 30, 128);
  const int32_t levels = GENERATE(1, 1000);
  const Sizes z{15, 32000, k};
  CAPTURE(k, levels);
  host::reset_launch_stats();
  run_topk(z, levels, testing::test_seed(91000 + static_cast<uint64_t>(k) * 7 + static_cast<uint64_t>(levels)));
  const auto all = host::launch_stats();
  REQUIRE(all.size() == 2);  // the chunk kernel, then the merge
  const auto chunk = launches_of("topk_chunk_kernel");
  const auto merge = launches_of("topk_merge_kernel");
  REQUIRE(chunk.size() == 1);
  REQUIRE(merge.size() == 1);
  // 15 rows fill the chip: 8 chunks of 4,096 per row, 120 blocks on 132 SMs (was 15)
  CHECK(chunk[0].blocks == 15u * 8u);
  CHECK(merge[0].blocks == 1);
  const int bound = select_rounds_bound(int64_t{z.rows} * z.vocab);  // 1 + 3 x 11 + 4 = 38 for 480,000 flat indices
  CHECK(bound == 38);
  CHECK(static_cast<int>(chunk[0].barrier_rounds_max) <= bound);
  CHECK(static_cast<int>(merge[0].barrier_rounds_max) <= bound);
  CHECK(static_cast<int>(chunk[0].barrier_rounds_max) <= 3 * ceil_log2(z.vocab));
  // Digits every candidate in play shares are fixed without a pass, and a
  // threshold bin of at most 256 is ranked directly: even when every score
  // of a chunk ties (levels = 1), at most 4 passes run, not 11.
  CHECK(static_cast<int>(chunk[0].barrier_rounds_max) <= 1 + 3 * 4 + 4);
  CHECK(static_cast<int>(merge[0].barrier_rounds_max) <= 1 + 3 * 4 + 4);
  // the k-round design needed k x (log2(256) + 1) rounds per block in each kernel
  if (k >= 30) CHECK(static_cast<int>(merge[0].barrier_rounds_max) * 5 < k * 9);
}

TEST_CASE("selection structure: the fused STATIC step at the paper setting is 2 launches of log depth, any k", "[cuda_emu][structure]") {
  // STATIC's Sec. 5 setting: batch 2, beam 70, |V| = 2048, L = 8, d = 2 (a
  // smaller |C| than the paper's: the structure does not depend on it).
  const int32_t k = GENERATE(7, 70);
  const int32_t batch = 2, beam = 70, V = 2048, L = 8, d = 2, n = batch * beam;
  const uint64_t seed = testing::test_seed(92000 + static_cast<uint64_t>(k));
  CAPTURE(k, seed);
  std::mt19937_64 rng(seed);
  const ConstraintSet c = constraint_set_random(20000, L, V, rng());
  const TransitionMatrix tm = TransitionMatrix::build(c, {d, CsrLayout::compact});
  const cuda::DeviceTransitionMatrix dm(tm);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  {
    cuda::StaticStepCuda st(dm, n, batch, k, stream);
    std::normal_distribution<float> g(0.0f, 3.0f);
    std::vector<float> logits(static_cast<size_t>(n) * V);
    for (auto& x : logits) x = g(rng);
    const auto d_logits = testing::upload(logits);
    std::vector<double> scores(static_cast<size_t>(n), 0.0);
    StaticStep cpu_step(tm);
    StaticStepResult twin;
    // a dense step (t = 1 < d) and a sparse one (t = 3)
    for (const int32_t t : {1, 3}) {
      CAPTURE(t);
      const std::vector<int64_t> states = testing::random_static_states(c, tm, n, t, rng);
      st.reset(states, scores, t);
      st.poison();
      host::reset_launch_stats();
      st.launch(d_logits.data(), false, false);
      st.check("structure test");
      const auto all = host::launch_stats();
      const auto rows = launches_of("static_row_kernel");
      const auto merge = launches_of("static_merge_kernel");
      REQUIRE(all.size() == static_cast<size_t>(cuda::kStaticStepKernels));
      REQUIRE(rows.size() == 1);
      REQUIRE(merge.size() == 1);
      CHECK(rows[0].blocks == static_cast<uint64_t>(n));
      CHECK(merge[0].blocks == static_cast<uint64_t>(batch));
      const int bound = select_rounds_bound(int64_t{n} * V);  // 1 + 3 x 11 + 4 = 38
      // the row kernel's log-normaliser and dense count add 3 block reductions of 10 rounds and one fill barrier
      CHECK(static_cast<int>(rows[0].barrier_rounds_max) <= bound + 31);
      CHECK(static_cast<int>(merge[0].barrier_rounds_max) <= bound);
      // the k-round merge ran 3 rounds per pick: 210 at k = 70
      if (k == 70) CHECK(static_cast<int>(merge[0].barrier_rounds_max) * 5 < 3 * k);
      const cuda::StaticStepHost h = st.download(false);
      cpu_step.run(logits.data(), states.data(), scores.data(), n, batch, k, t, twin);
      CHECK(twin.count == h.top_count);
      CHECK(twin.flat == h.top_flat);
      CHECK(twin.next == h.top_next);
    }
  }
  cudaStreamDestroy(stream);
}
