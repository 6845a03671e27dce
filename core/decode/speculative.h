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

struct SpeculativeConfig {
  int32_t gamma = 4;            // draft tokens per iteration
  int32_t max_new_tokens = 16;
  SamplingConfig sampling;      // warp applied to p and q alike; deterministic is not allowed
  nlohmann::json to_json() const;
};

SamplingDecodeResult speculative_decode(Model& target, Model& draft, const std::vector<int32_t>& prompt,
                                        const SpeculativeConfig& cfg, TraceSink* trace = nullptr, const DecodeOptions& opt = {});

}  // namespace triescope
