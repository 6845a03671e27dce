// The resource check a beam decoder runs before it allocates anything.
#pragma once
#include <cstdint>
#include <string>

#include "core/decode/beam_config.h"

namespace triescope {

// Before a beam decoder allocates anything: its largest mask (`mask_bits`)
// and logits (`logits_floats`) within the memory budget
// (core/common/resource_budget.h), and the KV figures its trace reports
// (the batch layout's num_beams x (prompt + max_new_tokens) slots of
// `bytes_per_slot`) within int64. Errors name `decoder`, the size and the option.
void beam_budget_check(const std::string& decoder, const BeamConfig& cfg, int64_t prompt_len, int64_t bytes_per_slot, double mask_bits,
                       double logits_floats);

}  // namespace triescope
