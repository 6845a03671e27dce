// Trace analysis (no Qt): what a step's verification did, read from the step
// records of a speculative trace; the GUI's verification pane and plots draw
// it. The verify kind comes from the record (trace v2: verify.kind) or, for a
// v1 trace, from the header's algorithm (trace_verify_kind), and names the
// registered kind (core/analysis/verify_kind.h) that reads it:
//  - dsbd_layers (core/analysis/dsbd_layers.cpp): a "draft" step with
//    draft_layers[] (the W_S draft beams per layer), then a "verify" step
//    whose verify.layers[] holds W_L^(l), the tested drafts with accept_prob /
//    u / p / q, the drafts rejected because their parent was, the beams
//    sampled when the layer was short, verify.stopped_at_layer and
//    verify.extra_layer;
//  - speculative_chain (core/analysis/speculative_chain.cpp): a draft chain,
//    then verify.decisions[] per layer;
//  - lookahead_candidates (core/analysis/lookahead_candidates.cpp): one
//    "verify" step per pass with the pool candidates, the candidate and
//    window nodes it computed and the accepted path.
// An unregistered kind is a named error. Everything is taken from the
// records as written; nothing is recomputed.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace_replay.h"

namespace triescope {

// How one draft (or one computed node) came out of verification.
enum class Decision {
  drafted,          // draft step: proposed, verified at the next step
  accepted,         // tested, u < accept_prob
  rejected,         // tested, u >= accept_prob
  untested,         // W_L^(l) acceptances were reached first (Alg. 1 lines 23-24), or an earlier draft was rejected
  parent_rejected,  // its parent beam was rejected (Alg. 1 line 10)
  not_verified,     // in a layer after the one where verification stopped: discarded
  sampled_residual, // drawn from the residual norm(max(0, p' - q)) of a short layer
  sampled_target,   // drawn from p_beam (short layer after the residual, the extra layer, the bonus token)
  window,           // lookahead: a Jacobi guess of the lookahead branch (computed, never accepted)
  pending,          // lookahead: the last accepted token, fed in this pass
  not_computed,     // lookahead: a candidate token cut by the trie's depth D or node budget B
};
const char* decision_name(Decision d);

struct VerifyChip {
  int32_t node = -1;   // -1 when the token has no node (lookahead: not computed, bonus token)
  int32_t token = -1;
  int32_t beam = -1;   // draft beam index within its layer (DSBD), -1 otherwise
  int32_t parent_beam = -1;
  Decision decision = Decision::drafted;
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double accept_prob = kNone, u = kNone, p = kNone, q = kNone, prob = kNone;
};

struct VerifyLayer {
  int32_t layer = 0;           // 1-based draft layer; gamma + 1 = the extra layer
  int32_t width = -1;          // W_L^(l) (DSBD), -1 when not recorded
  int32_t surviving = -1;      // drafts whose parent was accepted
  double predicted = VerifyChip::kNone;  // Eq. 5: P(at least W_L^(l) accepted)
  bool verified = true;        // false: after the stop layer
  bool passed = false;
  bool extra = false;          // lines 32-34: every layer passed, W beams from p_beam^(g+1)
  std::vector<VerifyChip> chips;
  int32_t count(Decision d) const;
};

struct LookaheadCandidate {
  std::vector<int32_t> tokens;
  std::vector<int32_t> nodes;  // [tokens] node that computed the token, -1 when cut (D, B)
  int32_t matched = 0;         // leading tokens on the accepted path
};

struct VerifyInfo {
  std::string kind;    // the registered verify kind that read the step; empty: none
  bool draft = false;  // a draft step (its drafts are verified at verify_step)
  std::string error;  // a malformed field, named; the rest is still shown
  int32_t iteration = -1, gamma = -1;
  int32_t stopped_at_layer = 0;  // 0: every layer passed (or not recorded)
  int32_t steps = -1;            // tokens this iteration / pass produced
  int32_t verify_step = -1;      // draft steps: the step that verifies them
  std::vector<VerifyLayer> layers;
  // lookahead
  std::string mode;  // header config.verify: trie | independent | greedy_only
  int32_t pending_node = -1;
  std::vector<LookaheadCandidate> candidates;
  std::vector<int32_t> window_nodes, candidate_nodes, accepted_nodes, accepted_tokens;
  int32_t candidate_tokens() const;  // sum of candidate lengths (what independent verification computes)

  bool empty() const { return kind.empty(); }
  int32_t total(Decision d) const;
};

// The verification state of `view`, read by its kind's spec (a DSBD verify
// step also reads its iteration's draft record for the drafts that were
// never tested). Never throws: a malformed field or an unregistered kind
// goes to `error`.
VerifyInfo verify_info(const StepView& view, const TraceReplay& replay);

// Whole-trace acceptance figures for the plots.
struct LayerAcceptance {
  int32_t layer = 0;
  int32_t verified = 0, passed = 0;       // layers verified / passed (W_L^(l) reached)
  int32_t tested = 0, accepted = 0;       // draft beams tested / accepted
  double predicted_sum = 0;               // sum of Eq. 5 predictions
  double width_sum = 0;                   // sum of W_L^(l)
};
struct AcceptanceSeries {
  std::vector<LayerAcceptance> layers;                 // DSBD / speculative: per draft layer
  std::vector<std::pair<int32_t, int32_t>> per_step;   // (step, tokens produced by the pass)
  bool has_layers() const { return !layers.empty(); }
};
// Every verify record, added up by its kind's spec; records of an
// unregistered kind are skipped.
AcceptanceSeries acceptance_series(const TraceReplay& replay);

}  // namespace triescope
