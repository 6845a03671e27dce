// A constraint on the output space that masks log-probabilities (STATIC and
// its baselines implement it). It composes with any beam decoder: after the
// log-softmax, before beam scores are added (STATIC Algorithm 1).
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/select/topk_candidates.h"

namespace triescope {

class LogitsConstraint {
 public:
  virtual ~LogitsConstraint() = default;
  virtual int64_t initial_state() const = 0;
  // Sets logprobs[i * vocab + v] to -inf for every token v that beam i (in
  // state states[i], at generation step `step`, 0-based) may not emit.
  // Fills per-beam trace info when `trace` is not null (a JSON array).
  virtual void apply(const std::vector<int64_t>& states, int32_t step, double* logprobs, int32_t vocab,
                     nlohmann::json* trace) = 0;
  // Sparse ranking, when the constraint offers it (else false: the decoder
  // masks full log-softmax rows with apply() and ranks them): `out` = the
  // best k (row, token) pairs by beam_scores[i] + log_softmax(rows[i])[token]
  // over the tokens row i may emit, in topk_candidates' order (flat = row *
  // vocab + token), without a masked copy of any row. Same trace as apply().
  virtual bool rank(const std::vector<int64_t>& /*states*/, int32_t /*step*/, const std::vector<const float*>& /*rows*/,
                    const double* /*beam_scores*/, int32_t /*vocab*/, int32_t /*k*/, std::vector<ScoredCandidate>& /*out*/,
                    nlohmann::json* /*trace*/) {
    return false;
  }
  // The state after emitting `token` from `state`.
  virtual int64_t next_state(int64_t state, int32_t token, int32_t step) const = 0;
  virtual nlohmann::json describe() const = 0;
};

}  // namespace triescope
