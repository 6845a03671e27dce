#include "core/trace/speculative_chain_verify_record.h"

#include <climits>

#include "core/trace/record_fields.h"

namespace triescope {

using nlohmann::json;

namespace {

constexpr const char* kIteration = "iteration";
constexpr const char* kDecisions = "decisions";
constexpr const char* kAccepted = "accepted";
constexpr const char* kSteps = "steps";
constexpr const char* kLayer = "layer";
constexpr const char* kNode = "node";
constexpr const char* kAcceptProb = "accept_prob";
constexpr const char* kU = "u";

}  // namespace

json SpeculativeChainVerify::to_json() const {
  json ds = json::array();
  for (const SpeculativeDecision& d : decisions)
    ds.push_back({{kLayer, d.layer}, {kNode, d.node}, {kAcceptProb, d.accept_prob}, {kU, d.u}, {kAccepted, d.accepted}});
  return {{"kind", kKind}, {kIteration, iteration}, {kDecisions, std::move(ds)}, {kAccepted, accepted}, {kSteps, steps}};
}

SpeculativeChainVerify SpeculativeChainVerify::from_json(const json& j, const std::string& where) {
  const RecordFields f(j, where);
  f.kind_check(kKind);
  SpeculativeChainVerify v;
  v.iteration = f.integer(kIteration, 0, INT32_MAX);
  for (size_t i = 0; i < f.size(kDecisions); ++i) {
    const RecordFields d = f.entry(kDecisions, i);
    v.decisions.push_back({d.int32(kLayer, 1), d.int32(kNode), d.number(kAcceptProb), d.number(kU), d.flag(kAccepted)});
  }
  v.accepted = f.int32(kAccepted);
  v.steps = f.int32(kSteps);
  return v;
}

}  // namespace triescope
