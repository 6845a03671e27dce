// SyntheticModel: a deterministic, integer-only stand-in for a transformer.
// It reads context only through the mask and its own slot cache of
// (token, position) pairs, so a wrong mask bit or position id changes its
// logits. Integer arithmetic end to end; logits are int32 / 4096 as float, so
// a CUDA twin can match it bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "core/model/model.h"

namespace triescope {

struct SyntheticConfig {
  int32_t vocab_size = 64;
  uint64_t seed = 1;
  int32_t peakiness_q8 = 256;       // logit spread, Q8 (256 = logits in [0, 16))
  int32_t repetitiveness_q8 = 0;    // Q8 weight of the local n-gram term (256 = only n-gram context)
  int32_t ngram = 2;                // tokens (by position) the local term reads, the query's own included
  int32_t eos_token = -1;           // -1: no EOS behaviour
  int32_t eos_per_million = 0;      // contexts in a million where EOS is made the top token
  uint64_t perturb_seed = 0;        // draft models: a second hash stream...
  int32_t perturb_q8 = 0;           // ...added with this Q8 weight (0 = none)
  KvShape nominal_shape{};          // for byte accounting only
};

// Raw fixed-point logits for one query from its visible (token, position)
// pairs. Exposed so the CUDA twin and its tests can share the definition of
// the function, not its implementation.
void synthetic_logits_fixed(const SyntheticConfig& cfg, const int32_t* tokens, const int32_t* positions,
                            int32_t num_visible, int32_t query_position, int32_t* out_fixed /* [vocab] */);
inline constexpr float kSyntheticLogitScale = 1.0f / 4096.0f;

class SyntheticModel final : public Model {
 public:
  explicit SyntheticModel(SyntheticConfig cfg);
  int32_t vocab_size() const override { return cfg_.vocab_size; }
  void forward(const StepInput& in, Logits& out) override;
  void compact(const CompactionPlan& plan) override;
  void reset() override { cache_.reset(); }
  nlohmann::json describe() const override;
  KvShape kv_shape() const override { return cfg_.nominal_shape; }
  const SyntheticConfig& config() const { return cfg_; }

 private:
  SyntheticConfig cfg_;
  SlotTokenCache cache_;
};

}  // namespace triescope
