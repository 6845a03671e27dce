// The verify kind "toy_guess" of the toy drafting algorithm (toy_drafting.h):
// each verify step's verify object names the guess node, whether it was
// accepted and the tokens the step produced. One draft layer of width 1.
#include "core/analysis/verify_read.h"
#include "tests/registry/toy_drafting.h"

namespace triescope::toy {
namespace {

using nlohmann::json;

void read_verify(VerifyRead& rd, const json& ver, VerifyInfo& out) {
  const bool accepted = rd.b(ver, "accepted", "verify");
  out.steps = rd.i(ver, "steps", "verify");
  out.gamma = 1;
  VerifyLayer L;
  L.layer = 1;
  L.width = 1;
  L.passed = accepted;
  L.chips.push_back(rd.chip(rd.i(ver, "guess_node", "verify"), accepted ? Decision::accepted : Decision::rejected));
  out.layers.push_back(std::move(L));
  out.stopped_at_layer = accepted ? 0 : 1;
}

void accumulate(const json& ver, int32_t step, AcceptanceSeries& s) {
  acceptance_add_steps(ver, step, s);
  LayerAcceptance& a = acceptance_layer(s, 1);
  const bool ok = acceptance_flag(ver, "accepted");
  ++a.verified;
  ++a.tested;
  a.passed += ok;
  a.accepted += ok;
  a.width_sum += 1;
}

std::vector<VerifyRow> rows(const VerifyInfo& info, const StepView&) {
  std::vector<VerifyRow> out;
  for (const VerifyLayer& L : info.layers) {
    VerifyRow r{"guess", L.passed ? "accepted" : "rejected", "", L.passed ? VerifyRowTag::passed : VerifyRowTag::stopped, {}};
    for (const VerifyChip& c : L.chips) r.chips.push_back({c, "#" + std::to_string(c.node)});
    out.push_back(std::move(r));
  }
  return out;
}

VerifyKindSpec spec() {
  VerifyKindSpec k;
  k.name = kToyGuessKind;
  k.description = "a test's toy: one guessed token per step, accepted or rejected";
  k.read_verify = read_verify;
  k.accumulate = accumulate;
  k.rows = rows;
  k.summary = [](const VerifyInfo& info) { return "<b>Toy guess</b>: " + std::to_string(info.steps) + " token(s) this step."; };
  k.narrate = [](const VerifyInfo& info, const StepView& v, const TraceReplay& r) {
    std::vector<NarrationSentence> out;
    for (const VerifyLayer& L : info.layers)
      for (const VerifyChip& c : L.chips)
        out.push_back(NarrationBuilder(v, r, "verify").text("Toy guess: ").node(c.node).text(L.passed ? " was guessed right." : " was guessed wrong.").take());
    return out;
  };
  k.verifier = typeid(ToyGuessVerifier);
  return k;
}

}  // namespace
TRIESCOPE_REGISTER_VERIFY_KIND(spec());
}  // namespace triescope::toy
