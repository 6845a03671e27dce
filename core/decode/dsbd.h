// Dynamic-width speculative beam decoding (Qin et al., AAAI 2025; papers/
// dynamic-width-speculative-beam-decoding.md). The draft model beam-samples
// W_S beams for gamma steps from the input beams (a draft forest, one tree
// per input beam); the target scores the whole forest in one forward pass
// (Section 3.3, Figure 3: DFS order, ancestor mask); Algorithm 1 verifies
// it layer by layer; Eq. 2-7 choose each layer's width W_L^(l).
//
// Beyond the paper: every input beam, its draft tree and the prompt live in
// ONE token tree over ONE slot layout (the draft and the target each hold a
// cache with that layout). The paper keeps one cache per input beam; the
// per-beam figure is computed alongside for comparison.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/json_reader.h"
#include "core/decode/sampling.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/dsbd.cpp), whose name and
// verify kind head the trace.
const AlgorithmSpec& dsbd_spec();

// Algorithm 1 line 17. The paper's prose and line 17 print q/p; the standard
// speculative rule (and the authors' code) is p/q. q_over_p exists only as
// the negative control of the distribution test (docs/dsbd.md).
enum class AcceptRatio { p_over_q, q_over_p };

struct DsbdConfig {
  int32_t draft_width = 4;   // W_S: draft beams per layer
  int32_t gamma = 3;         // draft layers per iteration
  int32_t width = 2;         // W_L when dynamic = false (and the width of the first iteration's extra layer)
  bool dynamic = true;       // Eq. 2-7 choose W_L^(l)
  double threshold = 0.9;    // t of Eq. 7
  int32_t min_width = 1;     // W_min of Eq. 6
  bool memory_constrained = false;  // Section 3.4: keep only the lowest-perplexity output beam
  AcceptRatio ratio = AcceptRatio::p_over_q;
  // Layers >= 2 test the surviving drafts against q_beam restricted to the
  // accepted parents and renormalised: that is the law they were drawn from.
  // false (negative control only): q_beam as drawn over all parents.
  bool renormalize_q = true;
  int32_t max_new_tokens = 16;
  SamplingConfig sampling;   // the warp T, applied to p_beam and q_beam alike; seed

  // Reads the sample's "dsbd" object; `max_new_tokens` and `sampling` come from elsewhere.
  static DsbdConfig from_json(JsonObjectReader r, int32_t default_width);
  nlohmann::json to_json() const;
};

// ---- Eq. 2-7 -------------------------------------------------------------

// alpha_j (Eq. 4) for j = 1..m: the chance that draft j is accepted after
// j - 1 rejections in a row, with p_1 = p, p_k = norm(max(p_{k-1} - q, 0)).
std::vector<double> dsbd_alphas(const std::vector<double>& p, const std::vector<double>& q, int32_t m, AcceptRatio ratio);
// P(m, k) for k = 0..m (Eq. 2-3): the chance that exactly k of m drafts are
// accepted when verification never stops early (a reset to p after each acceptance).
std::vector<double> dsbd_accept_count_probs(const std::vector<double>& alphas, int32_t m);
// Eq. 5-7: the largest K with P(at least K accepted) >= t, floored at W_min.
// `prob_at_least` (optional) receives P(at least W_L^(l) accepted).
int32_t dsbd_width(const std::vector<double>& p, const std::vector<double>& q, int32_t m, double t, int32_t w_min,
                   AcceptRatio ratio, double* prob_at_least = nullptr);

// ---- one layer of Algorithm 1 ---------------------------------------------

struct LayerDecision {
  int64_t pair = -1;           // index into the layer's (beam, token) domain
  int32_t draft = -1;          // index into `drafts`, -1 for a sampled beam
  double accept_prob = 0.0;    // min(1, ratio) when a draft was tested
  double u = 0.0;              // the uniform it was tested against
  bool accepted = false;
};

struct LayerResult {
  std::vector<LayerDecision> tested;  // drafts in order, until W_L^(l) acceptances
  std::vector<int64_t> outputs;        // W_L^(l) pairs: accepted drafts, then (if short) one from p', the rest from p_beam
  bool passed = false;                 // W_L^(l) drafts accepted: verification goes on to the next layer
};

// Uniform source: (stream, draw index) -> U[0, 1).
using UniformFn = std::function<double(RandStream, uint32_t)>;

// Algorithm 1 lines 13-29 over one layer: `p` = p_beam^(l), `q` = q_beam^(l)
// over the same (beam, token) domain, `drafts` = the surviving draft pairs
// (iid from q), `width` = W_L^(l).
LayerResult dsbd_verify_layer(const std::vector<double>& p, const std::vector<double>& q, const std::vector<int64_t>& drafts,
                              int32_t width, AcceptRatio ratio, const UniformFn& uniform);

// Algorithm 1 lines 13-29 run elsewhere (the cuda backend's device verifier,
// installed in DecodeOptions::verifiers under "dsbd_layers"). Contract: the result of
// dsbd_verify_layer(p, q, drafts, width, ratio, u) with u(s, d) =
// philox_uniform(PhiloxKey{seed}, step, layer, 0, d, s), exactly.
class DsbdLayerVerifier {
 public:
  virtual ~DsbdLayerVerifier() = default;
  virtual LayerResult verify_layer(const std::vector<double>& p, const std::vector<double>& q, const std::vector<int64_t>& drafts,
                                   int32_t width, AcceptRatio ratio, uint64_t seed, uint32_t step, uint32_t layer) = 0;
};

// ---- the decoder ------------------------------------------------------------

struct DsbdStats {
  int64_t iterations = 0;
  int64_t full_iterations = 0;         // iterations that drafted all gamma layers (Theorem 3.2's population)
  int64_t steps_in_full_iterations = 0;  // beam-sampling steps those produced
  std::vector<int64_t> layer_verified;   // [gamma] layer l verified (its parents survived)
  std::vector<int64_t> layer_accepted;   // [gamma] layer l reached W_L^(l) acceptances
  double predicted_accept_sum = 0.0;     // sum over verified layers of P(>= W_L^(l) accepted) (Eq. 5)
  int64_t width_sum = 0;                 // sum of W_L^(l) over verified layers
  int64_t draft_beams_tested = 0, draft_beams_accepted = 0;
  int64_t paper_peak_slots = 0;   // one cache per input beam (Section 3.3), target side
  int64_t shared_peak_slots = 0;  // this shared-trie layout, target side
  nlohmann::json to_json() const;
};

struct DsbdResult {
  SamplingDecodeResult out;
  DsbdStats stats;
};

DsbdResult dsbd_decode(Model& target, Model& draft, const std::vector<int32_t>& prompt, const DsbdConfig& cfg,
                       TraceSink* trace = nullptr, const DecodeOptions& opt = {});

// The forest's serialisation (Figure 3): each tree rooted at a distinct input
// beam node, in input-beam order, nodes in DFS order restricted to `in_forest`.
std::vector<int32_t> dsbd_forest_order(const TokenTree& tree, const std::vector<int32_t>& roots,
                                       const std::vector<char>& in_forest);

}  // namespace triescope
