#include "core/decode/decoder_trace.h"

namespace triescope {

json drafting_config(json settings, const std::vector<int32_t>& prompt, const Model& draft) {
  settings["prompt"] = prompt;
  settings["draft_model"] = draft.describe();
  return settings;
}

json hypotheses_json(const std::vector<Hypothesis>& hypotheses) {
  json outs = json::array();
  for (const Hypothesis& h : hypotheses) outs.push_back({{"tokens", h.tokens}, {"score", h.score}, {"sum_logprobs", h.sum_logprobs}});
  return outs;
}

json sequences_json(const std::vector<std::vector<int32_t>>& sequences) {
  json outs = json::array();
  for (const auto& s : sequences) outs.push_back({{"tokens", s}});
  return outs;
}

}  // namespace triescope
