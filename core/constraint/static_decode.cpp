#include "core/constraint/static_decode.h"

#include <chrono>
#include <limits>

#include "core/common/error.h"
#include "core/constraint/constraint_index.h"

namespace triescope {

StaticDecodeResult static_decode(const TransitionMatrix& tm, int32_t groups, int32_t beams, const StaticLogitsFn& logits) {
  TS_CHECK(groups >= 1 && beams >= 1, "static decode: " << groups << " queries x " << beams << " beams");
  TS_CHECK(logits, "static decode: no logits function");
  const int32_t L = tm.length, M = beams, V = tm.vocab_size;
  const size_t slots = static_cast<size_t>(groups) * static_cast<size_t>(M);
  StaticDecodeResult res;
  res.groups = groups;
  res.beams = M;
  res.length = L;
  std::vector<int64_t> states(slots, kDeadState), next_states(slots);
  std::vector<double> scores(slots, -std::numeric_limits<double>::infinity()), next_scores(slots);
  std::vector<int32_t> tokens(slots * static_cast<size_t>(L), -1), next_tokens(tokens.size());
  for (int32_t g = 0; g < groups; ++g) {  // one beam per query at the root
    states[static_cast<size_t>(g) * M] = 0;
    scores[static_cast<size_t>(g) * M] = 0.0;
  }
  StaticStep step(tm);
  StaticStepResult r;
  std::vector<const float*> rows;
  std::vector<int64_t> st;
  std::vector<double> sc;
  const auto t0 = std::chrono::steady_clock::now();
  for (int32_t t = 0; t < L; ++t) {
    const int32_t m = t == 0 ? 1 : M;  // rows per query this step
    const int32_t n = groups * m;
    rows.assign(static_cast<size_t>(n), nullptr);
    st.resize(static_cast<size_t>(n));
    sc.resize(static_cast<size_t>(n));
    for (int32_t g = 0; g < groups; ++g)
      for (int32_t j = 0; j < m; ++j) {
        const size_t b = static_cast<size_t>(g) * M + static_cast<size_t>(j), i = static_cast<size_t>(g) * m + static_cast<size_t>(j);
        st[i] = states[b];
        sc[i] = scores[b];
        if (states[b] != kDeadState) rows[i] = logits(t, g, j);  // a dead beam's row is never read
      }
    step.run(rows.data(), st.data(), sc.data(), n, groups, M, t, r, &res.times);
    for (int32_t g = 0; g < groups; ++g)
      for (int32_t j = 0; j < M; ++j) {
        const size_t b = static_cast<size_t>(g) * M + static_cast<size_t>(j), o = static_cast<size_t>(g) * M + static_cast<size_t>(j);
        int32_t* dst = next_tokens.data() + b * static_cast<size_t>(L);
        if (j >= r.count[static_cast<size_t>(g)]) {
          next_states[b] = kDeadState;
          next_scores[b] = -std::numeric_limits<double>::infinity();
          std::fill(dst, dst + L, -1);
          continue;
        }
        const int64_t row = r.flat[o] / V;  // this step's row: query g, beam row - g * m
        const size_t parent = static_cast<size_t>(g) * M + static_cast<size_t>(row - int64_t{g} * m);
        std::copy(tokens.begin() + static_cast<std::ptrdiff_t>(parent) * L, tokens.begin() + static_cast<std::ptrdiff_t>(parent) * L + t, dst);
        dst[t] = static_cast<int32_t>(r.flat[o] % V);
        std::fill(dst + t + 1, dst + L, -1);
        next_states[b] = r.next[o];
        next_scores[b] = r.score[o];
      }
    states.swap(next_states);
    scores.swap(next_scores);
    tokens.swap(next_tokens);
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.live.assign(static_cast<size_t>(groups), 0);
  for (int32_t g = 0; g < groups; ++g)
    for (int32_t j = 0; j < M; ++j) res.live[static_cast<size_t>(g)] += states[static_cast<size_t>(g) * M + static_cast<size_t>(j)] != kDeadState;
  res.tokens = std::move(tokens);
  res.scores = std::move(scores);
  res.states = std::move(states);
  return res;
}

}  // namespace triescope
