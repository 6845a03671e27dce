// STATIC's decoding loop (Alg. 1 over t = 0 .. L-1) with the whole step of
// static_step.h: `groups` queries of M beams each; step 0 starts from one
// beam per query at the root, every later step ranks the M beams' allowed
// tokens and keeps the best M (the shape of the authors' decoder,
// sparse_transition_torch). A beam without a candidate is dead: its state
// is kDeadState, its score -inf, its tokens -1, so every live beam holds an
// id of C after L steps, however few ids a prefix leads to.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/constraint/static_step.h"
#include "core/constraint/transition_matrix.h"

namespace triescope {

struct StaticDecodeResult {
  int32_t groups = 0, beams = 0, length = 0;
  std::vector<int32_t> tokens;  // [groups x beams x L], best beam first; -1 for a dead beam
  std::vector<double> scores;   // [groups x beams] sum of log-probs; -inf for a dead beam
  std::vector<int64_t> states;  // [groups x beams] final trie states
  std::vector<int32_t> live;    // [groups] beams holding a complete id
  double seconds = 0.0;         // the steps' wall time, logits callbacks included
  StaticStepTimes times;        // the steps' constraint / ranking split
};

// The logits row of beam `beam` of query `group` at step `step` (at step 0
// only beam 0 exists); the pointer must stay valid until the step returns.
using StaticLogitsFn = std::function<const float*(int32_t step, int32_t group, int32_t beam)>;

StaticDecodeResult static_decode(const TransitionMatrix& tm, int32_t groups, int32_t beams, const StaticLogitsFn& logits);

}  // namespace triescope
