// The parameters the synthetic model's logits depend on: what
// synthetic_logits_fixed (core/model/synthetic_model.h) and its CUDA twin
// (cuda/synthetic_logits.cuh) both read. Plain integers, so the device takes
// it by value as it is.
#pragma once
#include <cstdint>

namespace triescope {

struct SyntheticLogitsConfig {
  int32_t vocab_size = 64;
  uint64_t seed = 1;
  int32_t peakiness_q8 = 256;       // logit spread, Q8 (256 = logits in [0, 16))
  int32_t repetitiveness_q8 = 0;    // Q8 weight of the local n-gram term (256 = only n-gram context)
  int32_t ngram = 2;                // tokens (by position) the local term reads, the query's own included
  int32_t eos_token = -1;           // -1: no EOS behaviour
  int32_t eos_per_million = 0;      // contexts in a million where EOS is made the top token
  uint64_t perturb_seed = 0;        // draft models: a second hash stream...
  int32_t perturb_q8 = 0;           // ...added with this Q8 weight (0 = none)
};

}  // namespace triescope
