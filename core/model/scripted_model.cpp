#include "core/model/scripted_model.h"

#include <algorithm>

#include "core/common/error.h"

namespace triescope {

ScriptedModel::ScriptedModel(ScriptedConfig cfg) : cfg_(std::move(cfg)) {
  TS_CHECK(cfg_.vocab.size() >= 2, "scripted model: vocab must hold at least 2 tokens");
  for (size_t i = 0; i < cfg_.entries.size(); ++i) {
    const auto& e = cfg_.entries[i];
    for (auto& [t, l] : e.next)
      TS_CHECK(t >= 0 && t < vocab_size(), "scripted model: entries[" << i << "] names token " << t << " outside vocab");
    TS_CHECK(index_.emplace(e.context, i).second, "scripted model: entries[" << i << "] repeats a context");
  }
}

void ScriptedModel::forward(const StepInput& in, Logits& out) {
  step_input_check(in, vocab_size());
  cache_.write(in);
  const int32_t q = static_cast<int32_t>(in.tokens.size());
  out.resize(q, vocab_size());
  for (int32_t r = 0; r < q; ++r) {
    std::vector<int32_t> ctx;
    const bool exact = cache_.context(in, r, ctx);
    float* o = out.row(r);
    std::fill(o, o + vocab_size(), cfg_.default_logit);
    auto it = exact ? index_.find(ctx) : index_.end();
    if (it != index_.end())
      for (auto& [t, l] : cfg_.entries[it->second].next) o[t] = l;
  }
}

void ScriptedModel::compact(const CompactionPlan& plan) { cache_.compact(plan); }

nlohmann::json ScriptedModel::describe() const {
  return {{"type", "scripted"}, {"vocab_size", vocab_size()}, {"entries", cfg_.entries.size()},
          {"default_logit", cfg_.default_logit}};
}

}  // namespace triescope
