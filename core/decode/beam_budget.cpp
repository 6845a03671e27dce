#include "core/decode/beam_budget.h"

#include <iomanip>

#include "core/common/error.h"
#include "core/common/resource_budget.h"

namespace triescope {

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
