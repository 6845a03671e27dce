// MultiGen (multigen-structured-masking.md): k samples from one prompt.
//  - copy (Method 1): k copies of the prompt, batch decode; KV O(k (n + t)).
//  - structured (Method 2): one prompt, the k new tokens of each step appended
//    to one sequence; the structured mask is the ancestor mask of a star tree
//    (prompt chain + k chains) and the blocked position ids (n + t for every
//    sample at step t) are depths. KV O(n + t k).
//  - hybrid (Method 3): Method 2's layout; the step says every query reads the
//    whole prompt (StepInput::shared_prefix_slots), so a model attends to the
//    prompt densely and gathers only each sample's own tokens, never the
//    k x k cross terms. Same result as Method 2.
// The three are exact: sample i at step t draws with the same Philox counter
// (seed, t, 0, i) in every method, so the same seed gives the same samples.
#pragma once
#include <cstdint>
#include <vector>

#include "core/common/enum_names.h"
#include "core/decode/sampling.h"
#include "core/model/model.h"
#include "core/trace/trace.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/multigen.cpp), whose name and
// verify kind head the trace.
const AlgorithmSpec& multigen_spec();

enum class MultiGenMethod { copy, structured, hybrid };
inline constexpr EnumName<MultiGenMethod> kMultiGenMethodNames[] = {
    {MultiGenMethod::copy, "copy"}, {MultiGenMethod::structured, "structured"}, {MultiGenMethod::hybrid, "hybrid"}};
const char* multigen_method_name(MultiGenMethod m);

struct MultiGenConfig {
  int32_t num_samples = 2;      // k
  int32_t max_new_tokens = 16;  // m
  int32_t eos_token = -1;
  SamplingConfig sampling;      // temperature, top-k, top-p, seed
  MultiGenMethod method = MultiGenMethod::structured;
};

struct MultiGenMetrics {
  int32_t prompt_len = 0;
  int32_t steps = 0;
  int64_t model_calls = 0;
  int64_t computed_tokens = 0;
  int64_t peak_slots = 0;
  int64_t peak_bytes = 0;
  int64_t attention_cells_dense = 0;   // sum over queries of the slots a dense kernel scores
  int64_t attention_cells_needed = 0;  // sum over queries of the slots the mask allows
  double seconds = 0.0;
  nlohmann::json to_json() const;
};

struct MultiGenResult {
  std::vector<std::vector<int32_t>> samples;  // [k] generated tokens (EOS included when drawn)
  MultiGenMetrics metrics;
};

// opt: the trace's backend (the sampling itself runs on the host).
MultiGenResult multigen_decode(Model& model, const std::vector<int32_t>& prompt, const MultiGenConfig& cfg,
                               TraceSink* trace = nullptr, const DecodeOptions& opt = {});

}  // namespace triescope
