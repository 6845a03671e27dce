// Verify kind "speculative_chain" (speculative decoding; core/decode/
// speculative.cpp): a draft step adds the draft chain (one node per layer),
// the verify step's verify.decisions[] has the tested layers and adds one
// node: from the residual after a rejection, or the bonus token from p.
#include <map>

#include "core/analysis/verify_read.h"
#include "core/decode/speculative.h"
#include "core/trace/trace.h"

namespace triescope {
namespace {

using nlohmann::json;

void read_draft(VerifyRead& rd, VerifyInfo& out) {
  int32_t l = 0;
  for (int32_t n : rd.view.added) {
    VerifyLayer L;
    L.layer = ++l;
    L.verified = false;
    L.width = 1;
    L.chips.push_back(rd.chip(n, Decision::drafted));
    out.layers.push_back(std::move(L));
  }
  out.gamma = l;
}

// Layer l of the chain: its draft node and, when tested, the decision.
VerifyLayer chain_layer(VerifyRead& rd, int32_t l, const std::vector<int32_t>& chain, const json* decision) {
  VerifyLayer L;
  L.layer = l;
  L.width = 1;
  L.verified = decision != nullptr;
  VerifyChip c = rd.chip(static_cast<size_t>(l - 1) < chain.size() ? chain[static_cast<size_t>(l - 1)] : -1, Decision::untested);
  if (decision) {
    const std::string dp = "verify.decisions";
    if (c.node < 0) c = rd.chip(rd.i(*decision, "node", dp), Decision::untested);
    c.accept_prob = rd.d(*decision, "accept_prob", dp);
    c.u = rd.d(*decision, "u", dp);
    c.decision = rd.b(*decision, "accepted", dp) ? Decision::accepted : Decision::rejected;
    L.passed = c.decision == Decision::accepted;
  }
  L.chips.push_back(c);
  return L;
}

// The node the verify step adds: from the residual of the first rejected
// layer, or the bonus token from p when every draft was accepted.
void verify_sample(VerifyRead& rd, int32_t accepted, int32_t g, VerifyInfo& out) {
  for (int32_t n : rd.view.added) {
    if (accepted < g && static_cast<size_t>(accepted) < out.layers.size()) {
      out.stopped_at_layer = accepted + 1;
      out.layers[static_cast<size_t>(accepted)].chips.push_back(rd.chip(n, Decision::sampled_residual));
    } else {
      VerifyLayer L;
      L.layer = g + 1;
      L.extra = true;
      L.passed = true;
      L.width = 1;
      L.chips.push_back(rd.chip(n, Decision::sampled_target));
      out.layers.push_back(std::move(L));
    }
  }
}

void read_verify(VerifyRead& rd, const json& ver, VerifyInfo& out) {
  out.iteration = rd.i(ver, "iteration", "verify");
  out.steps = rd.i(ver, "steps", "verify");
  const int32_t accepted = rd.i(ver, "accepted", "verify", 0);
  std::vector<int32_t> chain;  // the draft record's added nodes, in order
  if (const std::optional<json> draft = rd.draft_record()) {
    const json& added = rd.arr(*draft, "added", "draft");
    for (size_t j = 0; j < added.size(); ++j) chain.push_back(rd.i(added[j], "id", "draft.added[" + std::to_string(j) + "]"));
  }
  const json& dec = rd.arr(ver, "decisions", "verify");
  std::map<int32_t, const json*> by_layer;
  for (size_t j = 0; j < dec.size(); ++j) by_layer[rd.i(dec[j], "layer", "verify.decisions[" + std::to_string(j) + "]", static_cast<int32_t>(j) + 1)] = &dec[j];
  const int32_t g = std::max<int32_t>(static_cast<int32_t>(chain.size()), by_layer.empty() ? 0 : by_layer.rbegin()->first);
  out.gamma = g;
  for (int32_t l = 1; l <= g; ++l) {
    const auto it = by_layer.find(l);
    out.layers.push_back(chain_layer(rd, l, chain, it == by_layer.end() ? nullptr : it->second));
  }
  verify_sample(rd, accepted, g, out);
}

void accumulate(const json& ver, int32_t step, AcceptanceSeries& s) {
  acceptance_add_steps(ver, step, s);
  if (!ver.contains("decisions") || !ver["decisions"].is_array()) return;
  for (const json& d : ver["decisions"]) {
    const auto l = acceptance_layer_of(d);
    if (!l) continue;
    LayerAcceptance& a = acceptance_layer(s, *l);
    const bool ok = acceptance_flag(d, "accepted");
    ++a.verified;
    ++a.tested;
    a.passed += ok;
    a.accepted += ok;
    a.width_sum += 1;
  }
}

VerifyKindSpec spec() {
  VerifyKindSpec k;
  k.name = kVerifySpeculativeChain;
  k.description = "speculative decoding: a draft chain, one accept / reject decision per layer, a residual or bonus token";
  k.read_draft = read_draft;
  k.read_verify = read_verify;
  k.accumulate = accumulate;
  k.rows = [](const VerifyInfo& info, const StepView&) { return verify_layer_rows(info); };
  k.summary = verify_layer_summary;
  k.verifier = typeid(SpeculativeVerifier);
  return k;
}

}  // namespace
TRIESCOPE_REGISTER_VERIFY_KIND(spec());
}  // namespace triescope
