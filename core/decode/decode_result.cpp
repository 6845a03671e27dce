#include "core/decode/decode_result.h"

namespace triescope {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DecodeMetrics, prompt_len, steps, output_len, model_calls, computed_tokens, peak_slots, final_slots,
                                   peak_bytes, batch_peak_slots, batch_peak_bytes, gc_runs, mem_per_token, batch_mem_per_token, seconds)
nlohmann::json DecodeMetrics::to_json() const { return *this; }

}  // namespace triescope
