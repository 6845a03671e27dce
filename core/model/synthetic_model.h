// SyntheticModel: a deterministic, integer-only stand-in for a transformer.
// It reads context only through the mask and its own slot cache of
// (token, position) pairs, so a wrong mask bit or position id changes its
// logits. Integer arithmetic end to end; logits are int32 / 4096 as float, so
// a CUDA twin can match it bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "core/model/model.h"
#include "core/model/synthetic_logits_config.h"

namespace triescope {

// The logits' parameters and, for byte accounting only, the shape of a real
// cache's slot.
struct SyntheticConfig : SyntheticLogitsConfig {
  KvShape nominal_shape{};
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
