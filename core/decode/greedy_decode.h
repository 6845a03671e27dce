// Plain greedy decoding, one token per forward pass: the reference output
// lookahead decoding must reproduce token for token.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/decode/decode_options.h"
#include "core/model/model.h"
#include "core/trace/trace.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/greedy.cpp), whose name heads the trace.
const AlgorithmSpec& greedy_spec();

struct GreedyConfig {
  int32_t max_new_tokens = 64;
  int32_t eos_token = -1;  // -1: none
};

struct GreedyMetrics {
  int32_t prompt_len = 0;
  int32_t generated = 0;
  int32_t steps = 0;            // forward passes after the prefill
  int64_t computed_tokens = 0;  // every token fed, the prefill included
  int64_t computed_decode = 0;  // computed_tokens minus the prefill
  int64_t peak_slots = 0;
  double seconds = 0.0;
  // The summary's metrics, with lookahead's three counters (verify_tokens,
  // lookahead_tokens, accepted_from_candidates) at 0: greedy is lookahead's
  // reference, so the two summaries compare field by field.
  nlohmann::json to_json() const;
};

struct GreedyResult {
  std::vector<int32_t> tokens;  // generated tokens (EOS included if produced)
  GreedyMetrics metrics;
};

// Greedy's one seam: where each step's argmax runs. The cuda backend puts a
// device one into DecodeOptions::verifiers (VerifierSet::put_seam under
// kGreedyArgmaxSeam, cuda/greedy_argmax.h); none: argmax_row on the host.
inline constexpr const char* kGreedyArgmaxSeam = "greedy_argmax";
class GreedyArgmax {
 public:
  virtual ~GreedyArgmax() = default;
  // argmax_row's rule over logits.row(row): the lowest index of the largest
  // non-NaN value, 0 when the row's first value is NaN.
  virtual int32_t argmax(const Logits& logits, int32_t row) = 0;
};

// opt: the trace's backend, and where the argmax runs (its seam in opt.verifiers).
GreedyResult greedy_decode(Model& model, const std::vector<int32_t>& prompt, const GreedyConfig& cfg, TraceSink* trace = nullptr,
                           const DecodeOptions& opt = {});
// The same with the two settings spelled out.
GreedyResult greedy_decode(Model& model, const std::vector<int32_t>& prompt, int32_t max_new_tokens, int32_t eos_token = -1,
                           TraceSink* trace = nullptr, const DecodeOptions& opt = {});

}  // namespace triescope
