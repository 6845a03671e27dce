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
  if (static_cast<int32_t>(tokens_.size()) < in.num_slots) {
    tokens_.resize(static_cast<size_t>(in.num_slots), -1);
    positions_.resize(static_cast<size_t>(in.num_slots), -1);
  }
  for (size_t i = 0; i < in.tokens.size(); ++i) {
    tokens_[static_cast<size_t>(in.slots[i])] = in.tokens[i];
    positions_[static_cast<size_t>(in.slots[i])] = in.positions[i];
  }
  const int32_t q = static_cast<int32_t>(in.tokens.size());
  out.resize(q, vocab_size());
  for (int32_t r = 0; r < q; ++r) {
    const int32_t p = in.positions[static_cast<size_t>(r)];
    std::vector<int32_t> ctx(static_cast<size_t>(p) + 1, -1);
    bool exact = true;
    for (int32_t s = 0; s < in.num_slots; ++s) {
      if (!in.mask.test(r, s)) continue;
      const int32_t pos = positions_[static_cast<size_t>(s)];
      if (pos < 0 || pos > p || ctx[static_cast<size_t>(pos)] != -1) { exact = false; continue; }
      ctx[static_cast<size_t>(pos)] = tokens_[static_cast<size_t>(s)];
    }
    exact = exact && std::find(ctx.begin(), ctx.end(), -1) == ctx.end();
    float* o = out.row(r);
    std::fill(o, o + vocab_size(), cfg_.default_logit);
    auto it = exact ? index_.find(ctx) : index_.end();
    if (it != index_.end())
      for (auto& [t, l] : cfg_.entries[it->second].next) o[t] = l;
  }
}

void ScriptedModel::compact(const CompactionPlan& plan) {
  // A slot allocated in a layout shared with a second model may not be written here yet (DSBD).
  if (tokens_.size() < static_cast<size_t>(plan.old_num_slots)) {
    tokens_.resize(static_cast<size_t>(plan.old_num_slots), -1);
    positions_.resize(static_cast<size_t>(plan.old_num_slots), -1);
  }
  compaction_apply(plan, tokens_, 1);
  compaction_apply(plan, positions_, 1);
}

nlohmann::json ScriptedModel::describe() const {
  return {{"type", "scripted"}, {"vocab_size", vocab_size()}, {"entries", cfg_.entries.size()},
          {"default_logit", cfg_.default_logit}};
}

}  // namespace triescope
