// The verify kind "toy_guess" of the toy drafting algorithm (toy_drafting.h):
// each verify step's verify object names the guess node, whether it was
// accepted and the tokens the step produced. One draft layer of width 1.
// The kind is registered with its typed payload, ToyGuessVerify, as the
// product kinds are with theirs (core/trace/*_verify_record.h).
#include "core/analysis/verify_read.h"
#include "core/trace/record_fields.h"
#include "tests/registry/toy_drafting.h"

namespace triescope::toy {
namespace {

using nlohmann::json;

// The verify object the toy decoder writes (toy_drafting.cpp).
struct ToyGuessVerify {
  static constexpr const char* kKind = kToyGuessKind;
  int32_t guess_node = 0;
  bool accepted = false;
  int32_t steps = 0;

  json to_json() const { return {{"kind", kKind}, {"guess_node", guess_node}, {"accepted", accepted}, {"steps", steps}}; }
  static ToyGuessVerify from_json(const json& j, const std::string& where) {
    const RecordFields f(j, where);
    f.kind_check(kKind);
    return {f.int32("guess_node"), f.flag("accepted"), f.int32("steps")};
  }
};

void read_verify(VerifyRead& rd, const ToyGuessVerify& ver, VerifyInfo& out) {
  out.steps = ver.steps;
  out.gamma = 1;
  VerifyLayer L;
  L.layer = 1;
  L.width = 1;
  L.passed = ver.accepted;
  L.chips.push_back(rd.chip(ver.guess_node, ver.accepted ? Decision::accepted : Decision::rejected));
  out.layers.push_back(std::move(L));
  out.stopped_at_layer = ver.accepted ? 0 : 1;
}

void accumulate(const ToyGuessVerify& ver, int32_t step, AcceptanceSeries& s) {
  s.per_step.emplace_back(step, ver.steps);
  LayerAcceptance& a = acceptance_layer(s, 1);
  ++a.verified;
  ++a.tested;
  a.passed += ver.accepted;
  a.accepted += ver.accepted;
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

std::vector<NarrationSentence> narrate(const VerifyInfo& info, const StepView& v, const TraceReplay& r) {
  std::vector<NarrationSentence> out;
  for (const VerifyLayer& L : info.layers)
    for (const VerifyChip& c : L.chips)
      out.push_back(NarrationBuilder(v, r, "verify").text("Toy guess: ").node(c.node).text(L.passed ? " was guessed right." : " was guessed wrong.").take());
  return out;
}

VerifyKindSpec spec() {
  VerifyKindSpec k = verify_kind_spec<ToyGuessVerify>("a test's toy: one guessed token per step, accepted or rejected", read_verify,
                                                      accumulate, narrate, typeid(ToyGuessVerifier));
  k.rows = rows;
  k.summary = [](const VerifyInfo& info) { return "<b>Toy guess</b>: " + std::to_string(info.steps) + " token(s) this step."; };
  return k;
}

}  // namespace
TRIESCOPE_REGISTER_VERIFY_KIND(spec());
}  // namespace triescope::toy
