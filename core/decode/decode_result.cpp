#include "core/decode/decode_result.h"

namespace triescope {

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

}  // namespace triescope
