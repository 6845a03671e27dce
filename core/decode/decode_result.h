// What a decoder returns: its hypotheses, best first, and the figures of the
// run (model calls, KV slots and bytes, paper Eq. 1's memory per token).
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope {

struct Hypothesis {
  std::vector<int32_t> tokens;  // generated tokens (EOS not included)
  double score = 0.0;           // sum_logprobs / generated_len ^ length_penalty
  double sum_logprobs = 0.0;
  bool operator==(const Hypothesis&) const = default;
};

struct DecodeMetrics {
  int32_t prompt_len = 0;
  int32_t steps = 0;            // expansion steps run
  int32_t output_len = 0;       // tokens of the best hypothesis
  int64_t model_calls = 0;      // forward passes
  int64_t computed_tokens = 0;  // queries fed through the model
  int64_t peak_slots = 0;
  int64_t final_slots = 0;
  int64_t peak_bytes = 0;
  int64_t batch_peak_slots = 0;  // the batch layout's figure for the same decode
  int64_t batch_peak_bytes = 0;
  int64_t gc_runs = 0;
  double mem_per_token = 0.0;        // bytes, trie paper Eq. 1 over the KV cache
  double batch_mem_per_token = 0.0;  // same for the batch layout
  double seconds = 0.0;
  nlohmann::json to_json() const;
};

struct DecodeResult {
  std::vector<Hypothesis> hypotheses;  // best first (up to num_beams)
  DecodeMetrics metrics;
};

}  // namespace triescope
