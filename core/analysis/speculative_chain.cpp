// Verify kind "speculative_chain" (speculative decoding; core/decode/
// speculative.cpp): a draft step adds the draft chain (one node per layer),
// the verify step's verify.decisions[] has the tested layers and adds one
// node: from the residual after a rejection, or the bonus token from p. The
// verify object is a SpeculativeChainVerify
// (core/trace/speculative_chain_verify_record.h).
#include <map>

#include "core/analysis/verify_read.h"
#include "core/decode/speculative.h"
#include "core/trace/speculative_chain_verify_record.h"

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
VerifyLayer chain_layer(VerifyRead& rd, int32_t l, const std::vector<int32_t>& chain, const SpeculativeDecision* decision) {
  VerifyLayer L;
  L.layer = l;
  L.width = 1;
  L.verified = decision != nullptr;
  VerifyChip c = rd.chip(static_cast<size_t>(l - 1) < chain.size() ? chain[static_cast<size_t>(l - 1)] : -1, Decision::untested);
  if (decision) {
    if (c.node < 0) c = rd.chip(decision->node, Decision::untested);
    c.accept_prob = decision->accept_prob;
    c.u = decision->u;
    c.decision = decision->accepted ? Decision::accepted : Decision::rejected;
    L.passed = decision->accepted;
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

void read_verify(VerifyRead& rd, const SpeculativeChainVerify& ver, VerifyInfo& out) {
  out.iteration = static_cast<int32_t>(ver.iteration);
  out.steps = ver.steps;
  std::vector<int32_t> chain;  // the draft record's added nodes, in order
  if (const std::optional<json> draft = rd.draft_record()) {
    const json& added = rd.arr(*draft, "added", "draft");
    for (size_t j = 0; j < added.size(); ++j) chain.push_back(rd.i(added[j], "id", "draft.added[" + std::to_string(j) + "]"));
  }
  std::map<int32_t, const SpeculativeDecision*> by_layer;
  for (const SpeculativeDecision& d : ver.decisions) by_layer[d.layer] = &d;
  const int32_t g = std::max<int32_t>(static_cast<int32_t>(chain.size()), by_layer.empty() ? 0 : by_layer.rbegin()->first);
  out.gamma = g;
  for (int32_t l = 1; l <= g; ++l) {
    const auto it = by_layer.find(l);
    out.layers.push_back(chain_layer(rd, l, chain, it == by_layer.end() ? nullptr : it->second));
  }
  verify_sample(rd, ver.accepted, g, out);
}

void accumulate(const SpeculativeChainVerify& ver, int32_t step, AcceptanceSeries& s) {
  s.per_step.emplace_back(step, ver.steps);
  for (const SpeculativeDecision& d : ver.decisions) {
    LayerAcceptance* a = acceptance_layer_in(s, d.layer);
    if (!a) continue;
    ++a->verified;
    ++a->tested;
    a->passed += d.accepted;
    a->accepted += d.accepted;
    a->width_sum += 1;
  }
}

// Narration (DSBD paper, Section 2.2): the drafts are tested in order and the
// first rejection ends the chain; its place takes a token from the residual,
// or, when every draft passed, a bonus token from p.
std::vector<NarrationSentence> narrate(const VerifyInfo& I, const StepView& v, const TraceReplay& r) {
  std::vector<NarrationSentence> out;
  const std::string it = I.iteration >= 0 ? " (iteration " + std::to_string(I.iteration) + ")" : "";
  NarrationBuilder b(v, r, "verify");
  if (I.draft) {
    std::vector<std::pair<int32_t, int32_t>> chain;
    for (const VerifyLayer& L : I.layers)
      for (const auto& n : verify_chip_nodes(L, Decision::drafted)) chain.push_back(n);
    verify_narrate_nodes(b.text("Speculative draft" + it + ": the draft model proposes a chain of " + std::to_string(chain.size()) + " token(s): "), chain);
    b.text(I.verify_step >= 0 ? "; the target verifies them at step " + std::to_string(I.verify_step) + "." : ".");
    out.push_back(b.take());
    return out;
  }
  std::vector<std::pair<int32_t, int32_t>> accepted, untested, residual, bonus;
  const VerifyChip* rejected = nullptr;
  for (const VerifyLayer& L : I.layers)
    for (const VerifyChip& c : L.chips) {
      if (c.decision == Decision::accepted) accepted.emplace_back(c.node, 1);
      else if (c.decision == Decision::untested) untested.emplace_back(c.node, 1);
      else if (c.decision == Decision::rejected && !rejected) rejected = &c;
      else if (c.decision == Decision::sampled_residual) residual.emplace_back(c.node, 1);
      else if (c.decision == Decision::sampled_target) bonus.emplace_back(c.node, 1);
    }
  b.text("Speculative verification" + it + ": ");
  if (accepted.empty()) b.text("no draft accepted");
  else verify_narrate_nodes(b.text("the first " + std::to_string(accepted.size()) + " draft(s) accepted: "), accepted);
  if (rejected) {
    b.text("; ").node(rejected->node).text(" rejected (u = " + verify_fixed(rejected->u) + " >= accept probability " + verify_fixed(rejected->accept_prob) + ")");
    if (!untested.empty()) {
      verify_narrate_nodes(b.text(", so "), untested);
      b.text(" after it is not tested");
    }
  }
  if (!residual.empty()) {
    verify_narrate_nodes(b.text("; in its place "), residual);
    b.text(" is sampled from the residual norm(max(0, p - q))");
  }
  if (!bonus.empty()) {
    verify_narrate_nodes(b.text("; every draft passed, so the bonus token "), bonus);
    b.text(" is sampled from p");
  }
  if (I.steps >= 0) b.text("; " + std::to_string(I.steps) + " token(s) this iteration");
  out.push_back(b.text(".").take());
  return out;
}

}  // namespace
TRIESCOPE_REGISTER_VERIFY_KIND(verify_kind_spec<SpeculativeChainVerify>(
    "speculative decoding: a draft chain, one accept / reject decision per layer, a residual or bonus token",
    read_verify, accumulate, narrate, typeid(SpeculativeVerifier), read_draft));
}  // namespace triescope
