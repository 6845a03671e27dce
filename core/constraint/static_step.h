// STATIC's whole constrained decoding step on the CPU (Alg. 1 phases 1-4),
// designed end to end rather than as mask-then-rank: the CPU reference of
// cuda/static/static_step.cu, in the same shape.
//
//   A. constraint: per beam, its candidates. Sparse levels (t >= d): the CSR
//      row's B_t-wide slice (boundary lookup, slice, sanitisation, Alg. 2);
//      dense levels: the bit row of D (Alg. 1 DenseLookup).
//   B. per beam, one pass over its logits: the full-vocabulary
//      log-normaliser (running max and sum of exponentials); at dense levels
//      the bit row is applied inside the same pass, keeping only allowed
//      tokens that can still reach the group's top k. No masked copy of the
//      row is written.
//   C. the group's top k over the candidates only (beam score + logit -
//      log-normaliser), in topk_candidates' order (score descending, then
//      row * |V| + token ascending).
//   D. constraint: the next state of each winner (the gather of phase 4).
//
// Equal to the full-vocabulary path (log_softmax_row, dense_lookup /
// vntk_sparse, topk_candidates per group, static_next_state): the same ids,
// counts, valid counts and next states; scores differ only by the rounding
// of the log-normaliser (core/select/log_normaliser.h), which the tests bound
// at 1e-12 relative. States are treated as the mask treats them: dead or out
// of range states have no candidates, a sparse level reads any state's row.
#pragma once
#include <cstdint>
#include <vector>

#include "core/constraint/transition_matrix.h"

namespace triescope {

struct StaticStepResult {
  int32_t groups = 0;
  int32_t k = 0;
  std::vector<int32_t> count;  // [groups] candidates found (<= k)
  std::vector<double> score;   // [groups x k] best first; 0 past count
  std::vector<int64_t> flat;   // [groups x k] row * |V| + token, rows numbered over all n; -1 past count
  std::vector<int64_t> next;   // [groups x k] state after the token; -1 past count
  std::vector<int32_t> valid;  // [n] tokens the constraint allows each row
};

// Seconds spent in the constraint's phases (A and D) and in the rest (B, C),
// accumulated over calls when a StaticStepTimes is passed to run(). With
// time_dense_passes, each dense-level pass over a row (normaliser + bit row)
// is timed too, so a benchmark can subtract the plain normaliser's time over
// the same rows and get the bit test's own cost.
struct StaticStepTimes {
  double constraint_s = 0.0;
  double rank_s = 0.0;
  bool time_dense_passes = false;
  double dense_pass_s = 0.0;
  int64_t dense_passes = 0;
};

class StaticStep {
 public:
  // `tm` must outlive the step.
  explicit StaticStep(const TransitionMatrix& tm) : tm_(&tm) {}

  // rows[i]: beam i's logits [|V|] (not read, so may be null, for a beam
  // without candidates); states, beam_scores [n]; n rows split into
  // `groups` equal groups, the best k per group.
  void run(const float* const* rows, const int64_t* states, const double* beam_scores, int32_t n, int32_t groups, int32_t k,
           int32_t step, StaticStepResult& out, StaticStepTimes* times = nullptr);
  // logits [n x |V|] contiguous.
  void run(const float* logits, const int64_t* states, const double* beam_scores, int32_t n, int32_t groups, int32_t k, int32_t step,
           StaticStepResult& out, StaticStepTimes* times = nullptr);

  const TransitionMatrix& matrix() const { return *tm_; }

  struct Candidate {
    double score;
    int64_t flat;
    int64_t ref;  // sparse: the edge index; dense: the token
  };

 private:
  const TransitionMatrix* tm_;
  // Workspace, reused across calls.
  std::vector<const float*> rows_;
  std::vector<int64_t> start_;   // [n] sparse: first edge of the slice
  std::vector<int32_t> slots_;   // [n] sparse: min(len, B_t); dense: -1
  std::vector<const uint64_t*> bits_;  // [n] dense: the allowed bit row (null: none)
  std::vector<int32_t> tokens_;  // one row's surviving tokens (dense)
  std::vector<Candidate> cand_;  // one group's candidates
};

}  // namespace triescope
