// ScriptedModel: plays back next-token logits keyed by the visible context,
// to reproduce the papers' worked examples. Mask-honest like every model: it
// rebuilds the context from the (token, position) pairs its mask row lets it
// see; a context that is not exactly one token per position 0..p (a mask
// bug) or is not in the script gets the default logits.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace triescope {

struct ScriptedEntry {
  std::vector<int32_t> context;                 // token ids, position 0 first
  std::vector<std::pair<int32_t, float>> next;  // token -> logit
};

struct ScriptedConfig {
  std::vector<std::string> vocab;  // token strings; ids are indices
  float default_logit = -20.0f;    // logit of every token an entry does not name
  std::vector<ScriptedEntry> entries;
  KvShape nominal_shape{};
};

class ScriptedModel final : public Model {
 public:
  explicit ScriptedModel(ScriptedConfig cfg);
  int32_t vocab_size() const override { return static_cast<int32_t>(cfg_.vocab.size()); }
  void forward(const StepInput& in, Logits& out) override;
  void compact(const CompactionPlan& plan) override;
  void reset() override { cache_.reset(); }
  nlohmann::json describe() const override;
  KvShape kv_shape() const override { return cfg_.nominal_shape; }
  std::vector<std::string> vocab_strings() const override { return cfg_.vocab; }

 private:
  ScriptedConfig cfg_;
  std::map<std::vector<int32_t>, size_t> index_;  // context -> entry
  SlotTokenCache cache_;
};

}  // namespace triescope
