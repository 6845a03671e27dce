// Beam search settings with Hugging Face semantics (num_beams, top 2b
// candidates, EOS handling, length_penalty, early_stopping).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/json_reader.h"
#include "core/mask/ancestor_mask.h"
#include "core/decode/verifier_set.h"

namespace triescope {

enum class EarlyStopping { yes, no, never };

struct BeamConfig {
  int32_t num_beams = 3;
  int32_t max_new_tokens = 16;
  int32_t eos_token = -1;  // -1: no EOS
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::no;
  int32_t gc_interval = 0;  // trie only: collect garbage after every g-th step (0: never)

  static BeamConfig from_json(JsonObjectReader r, int32_t vocab_size);
  nlohmann::json to_json() const;
};

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

// Log-softmax of one logits row in double (both beam decoders call it; its
// own tests check it against a direct formula).
void log_softmax_row(const float* logits, int32_t vocab, double* out);

struct DecodeOptions {
  int32_t keyframe_interval = 16;  // steps between full-tree keyframes in the trace
  std::string backend = "cpu-reference";
  // Builds the trie decoder's mask rows; empty: the CPU reference
  // (IncrementalAncestorMask). The cuda backend installs its device builder.
  std::function<std::unique_ptr<MaskRowBuilder>()> make_mask;
  // Where verification runs, by verify kind; a kind with none: the CPU
  // reference. The cuda backend installs its device verifiers, which draw
  // the same Philox numbers.
  VerifierSet verifiers;
};

// Before a beam decoder allocates anything: its largest mask (`mask_bits`)
// and logits (`logits_floats`) within the memory budget
// (core/common/resource_budget.h), and the KV figures its trace reports
// (the batch layout's num_beams x (prompt + max_new_tokens) slots of
// `bytes_per_slot`) within int64. Errors name `decoder`, the size and the option.
void beam_budget_check(const std::string& decoder, const BeamConfig& cfg, int64_t prompt_len, int64_t bytes_per_slot, double mask_bits,
                       double logits_floats);

}  // namespace triescope
