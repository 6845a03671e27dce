// Speculative decoding of one sequence (Leviathan et al. 2023; DSBD paper
// Section 2.2), the single-beam baseline: the draft samples gamma tokens, the
// target scores them in one pass, token t is kept with probability
// min(1, p(x)/q(x)), the first rejection is replaced by a draw from
// norm(max(0, p - q)), and an all-accepted run earns one more token from p.
// Draft and target share one token tree and one slot layout (each model
// holds its own cache); rejected drafts are collected every iteration.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/decode/sampling.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/speculative.cpp), whose name and
// verify kind head the trace.
const AlgorithmSpec& speculative_spec();

struct SpeculativeConfig {
  int32_t gamma = 4;            // draft tokens per iteration
  int32_t max_new_tokens = 16;
  SamplingConfig sampling;      // warp applied to p and q alike; deterministic is not allowed
  nlohmann::json to_json() const;
};

// One iteration's verification (the decoder's CPU reference; the cuda
// backend's device verifier is its twin). p: [g + 1] warped target
// distributions after cur and after each draft; q: [g] the draft
// distributions the tokens were drawn from; draws on the counters
// (seed, iteration, j, 0, 0) of streams verify_accept / residual_sample, and
// (seed, iteration, g + 1, 0, 0) of target_sample when every draft passes.
struct SpecDecision {
  double accept_prob = 0.0;  // min(1, p_j(x) / q_j(x))
  double u = 0.0;
  bool accepted = false;
};
struct SpecChainResult {
  std::vector<SpecDecision> tested;  // drafts 1.. in order, up to the first rejection
  int32_t accepted = 0;
  int32_t next_token = -1;           // from max(0, p_j - q_j) after a rejection at j, else from p_{g+1}
  bool from_residual = false;
};
SpecChainResult speculative_verify_chain(const std::vector<std::vector<double>>& p, const std::vector<std::vector<double>>& q,
                                         const std::vector<int32_t>& tokens, uint64_t seed, uint32_t iteration);

// Runs speculative_verify_chain elsewhere (DecodeOptions::verifiers, "speculative_chain"); same contract.
class SpeculativeVerifier {
 public:
  virtual ~SpeculativeVerifier() = default;
  virtual SpecChainResult verify_chain(const std::vector<std::vector<double>>& p, const std::vector<std::vector<double>>& q,
                                       const std::vector<int32_t>& tokens, uint64_t seed, uint32_t iteration) = 0;
};

SamplingDecodeResult speculative_decode(Model& target, Model& draft, const std::vector<int32_t>& prompt,
                                        const SpeculativeConfig& cfg, TraceSink* trace = nullptr, const DecodeOptions& opt = {});

}  // namespace triescope
