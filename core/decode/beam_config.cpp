#include "core/decode/beam_config.h"

#include <cmath>
#include <iomanip>

#include "core/common/error.h"
#include "core/common/resource_budget.h"

namespace triescope {

BeamConfig BeamConfig::from_json(JsonObjectReader r, int32_t vocab_size) {
  BeamConfig c;
  c.num_beams = static_cast<int32_t>(r.get_int("num_beams", 1, 4096));
  TS_CHECK(int64_t{2} * c.num_beams <= vocab_size,
           r.where("num_beams") << " = " << c.num_beams << " needs a vocabulary of at least 2 x num_beams tokens, model has "
                                << vocab_size);
  c.max_new_tokens = static_cast<int32_t>(r.get_int("max_new_tokens", 1, 1 << 20));
  c.eos_token = static_cast<int32_t>(r.get_int("eos_token", -1, vocab_size - 1, -1));
  c.length_penalty = r.get_double("length_penalty", -100.0, 100.0, 1.0);
  if (r.has("early_stopping")) {
    const json& v = r.raw("early_stopping");
    if (v.is_boolean()) {
      c.early_stopping = v.get<bool>() ? EarlyStopping::yes : EarlyStopping::no;
    } else {
      TS_CHECK(v.is_string() && v.get<std::string>() == "never",
               r.where("early_stopping") << " must be true, false or \"never\", got " << v.dump());
      c.early_stopping = EarlyStopping::never;
    }
  }
  c.gc_interval = static_cast<int32_t>(r.get_int("gc_interval", 0, 1 << 20, 0));
  r.finish();
  return c;
}

nlohmann::json BeamConfig::to_json() const {
  nlohmann::json es = early_stopping == EarlyStopping::never ? nlohmann::json("never")
                                                             : nlohmann::json(early_stopping == EarlyStopping::yes);
  return {{"num_beams", num_beams},       {"max_new_tokens", max_new_tokens}, {"eos_token", eos_token},
          {"length_penalty", length_penalty}, {"early_stopping", es},          {"gc_interval", gc_interval}};
}

nlohmann::json DecodeMetrics::to_json() const {
  return {{"prompt_len", prompt_len},
          {"steps", steps},
          {"output_len", output_len},
          {"model_calls", model_calls},
          {"computed_tokens", computed_tokens},
          {"peak_slots", peak_slots},
          {"final_slots", final_slots},
          {"peak_bytes", peak_bytes},
          {"batch_peak_slots", batch_peak_slots},
          {"batch_peak_bytes", batch_peak_bytes},
          {"gc_runs", gc_runs},
          {"mem_per_token", mem_per_token},
          {"batch_mem_per_token", batch_mem_per_token},
          {"seconds", seconds}};
}

void log_softmax_row(const float* logits, int32_t vocab, double* out) {
  double mx = -INFINITY;
  for (int32_t v = 0; v < vocab; ++v) mx = std::max(mx, static_cast<double>(logits[v]));
  double sum = 0.0;
  for (int32_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - mx);
  const double lse = mx + std::log(sum);
  for (int32_t v = 0; v < vocab; ++v) out[v] = static_cast<double>(logits[v]) - lse;
}

void beam_budget_check(const std::string& decoder, const BeamConfig& cfg, int64_t prompt_len, int64_t bytes_per_slot, double mask_bits,
                       double logits_floats) {
  const double batch_slots = static_cast<double>(cfg.num_beams) * (static_cast<double>(prompt_len) + cfg.max_new_tokens);
  const double kv_bytes = batch_slots * static_cast<double>(bytes_per_slot);
  TS_CHECK(kv_bytes < 0x1p62, decoder << ": model.kv_shape's " << bytes_per_slot << " bytes per slot x " << std::fixed << std::setprecision(0)
                                      << batch_slots << " slots (beam.num_beams x (prompt + beam.max_new_tokens)) = " << kv_bytes
                                      << " bytes, past what a 64-bit byte count holds");
  resource_budget_check(decoder, "the attention mask (" + std::to_string(static_cast<int64_t>(mask_bits)) + " bits)", mask_bits / 8);
  resource_budget_check(decoder, "the logits (" + std::to_string(static_cast<int64_t>(logits_floats)) + " floats)", logits_floats * 4);
}

}  // namespace triescope
