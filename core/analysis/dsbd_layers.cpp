// Verify kind "dsbd_layers" (DSBD, Algorithm 1; core/decode/dsbd.cpp): a
// draft step's draft_layers[] (the W_S draft beams per layer), then a verify
// step's verify.layers[] (W_L^(l), the tested drafts with accept_prob / u /
// p / q, the drafts rejected because their parent was, the beams sampled
// when the layer was short), stopped_at_layer and extra_layer. Both are the
// typed records of core/trace/dsbd_layers_verify_record.h (DsbdLayersDraft,
// DsbdLayersVerify).
#include <map>
#include <set>

#include "core/analysis/verify_read.h"
#include "core/decode/dsbd.h"
#include "core/trace/dsbd_layers_verify_record.h"

namespace triescope {
namespace {

using nlohmann::json;

void read_draft(VerifyRead& rd, VerifyInfo& out) {
  if (const std::optional<DsbdLayersDraft> draft = rd.parse<DsbdLayersDraft>(rd.view.extra, "draft"))
    for (const DsbdDraftLayer& dl : draft->layers) {
      VerifyLayer L;
      L.layer = dl.layer;
      L.verified = false;
      for (const DsbdDraftBeam& b : dl.beams) {
        VerifyChip c = rd.chip(b.node, Decision::drafted);
        c.beam = b.beam;
        c.parent_beam = b.parent_beam;
        if (c.token < 0) c.token = b.token;
        c.q = b.q_beam;
        L.chips.push_back(c);
      }
      out.layers.push_back(std::move(L));
    }
  out.gamma = static_cast<int32_t>(out.layers.size());
}

// One layer of verify.layers[] (null when the layer was not verified) with
// its tested drafts by beam and the nodes rejected because their parent was.
struct TestedLayer {
  const DsbdVerifiedLayer* record = nullptr;
  std::map<int32_t, const DsbdDraftDecision*> tested;  // beam -> drafts[] entry
  std::set<int32_t> parent_rejected;
};

TestedLayer tested_layer(const DsbdVerifiedLayer* record, VerifyLayer& L) {
  TestedLayer t;
  t.record = record;
  if (!record) return t;
  L.width = record->width;
  L.surviving = record->surviving_drafts;
  L.predicted = record->predicted_accept;
  L.passed = record->passed;
  for (const DsbdDraftDecision& d : record->drafts) t.tested[d.beam] = &d;
  t.parent_rejected.insert(record->parent_rejected.begin(), record->parent_rejected.end());
  return t;
}

void decide(VerifyChip& c, const DsbdDraftDecision& d) {
  c.accept_prob = d.accept_prob;
  c.u = d.u;
  c.p = d.p;
  c.q = d.q;
  c.decision = d.accepted ? Decision::accepted : Decision::rejected;
}

// The iteration's draft beams of the layer (from the draft record), so the
// drafts that were never tested are shown too; returns the beams shown.
std::set<int32_t> drafted_chips(const VerifyRead& rd, const DsbdDraftLayer& layer, const TestedLayer& t, VerifyLayer& L) {
  std::set<int32_t> shown;
  for (const DsbdDraftBeam& b : layer.beams) {
    VerifyChip c = rd.chip(b.node, Decision::not_verified);
    c.beam = b.beam;
    c.parent_beam = b.parent_beam;
    c.q = b.q_beam;
    if (t.record) {
      if (auto it = t.tested.find(c.beam); it != t.tested.end()) decide(c, *it->second);
      else c.decision = t.parent_rejected.count(c.node) ? Decision::parent_rejected : Decision::untested;
    }
    shown.insert(c.beam);
    L.chips.push_back(c);
  }
  return shown;
}

void sampled_chips(const VerifyRead& rd, const std::vector<DsbdSampledBeam>& sampled, VerifyLayer& L) {
  for (const DsbdSampledBeam& s : sampled) {
    VerifyChip c = rd.chip(s.node, s.from == DsbdSampledFrom::residual ? Decision::sampled_residual : Decision::sampled_target);
    c.prob = s.prob;
    L.chips.push_back(c);
  }
}

template <class T>
const T* layer_of(const std::map<int32_t, const T*>& by_layer, int32_t l) {
  const auto it = by_layer.find(l);
  return it == by_layer.end() ? nullptr : it->second;
}

VerifyLayer verified_layer(const VerifyRead& rd, int32_t l, const std::map<int32_t, const DsbdVerifiedLayer*>& verified,
                           const std::map<int32_t, const DsbdDraftLayer*>& drafted) {
  VerifyLayer L;
  L.layer = l;
  const TestedLayer t = tested_layer(layer_of(verified, l), L);
  L.verified = t.record != nullptr;
  const DsbdDraftLayer* draft = layer_of(drafted, l);
  const std::set<int32_t> shown = draft ? drafted_chips(rd, *draft, t, L) : std::set<int32_t>();
  // Without the draft record (or for beams it lacks): the tested drafts and
  // the parent-rejected nodes as the verify record has them.
  for (const auto& [beam, d] : t.tested)
    if (!shown.count(beam)) {
      VerifyChip c = rd.chip(d->node, Decision::accepted);
      c.beam = beam;
      decide(c, *d);
      L.chips.push_back(c);
    }
  if (!draft)
    for (int32_t n : t.parent_rejected) L.chips.push_back(rd.chip(n, Decision::parent_rejected));
  if (t.record) sampled_chips(rd, t.record->sampled, L);
  return L;
}

// Lines 32-34: every layer passed, W beams from p_beam^(g+1).
void extra_layer(const VerifyRead& rd, const DsbdExtraLayer& ex, VerifyInfo& out) {
  VerifyLayer L;
  L.extra = true;
  L.passed = true;
  L.layer = ex.layer;
  L.width = ex.width;
  sampled_chips(rd, ex.sampled, L);
  out.layers.push_back(std::move(L));
}

void read_verify(VerifyRead& rd, const DsbdLayersVerify& ver, VerifyInfo& out) {
  out.iteration = static_cast<int32_t>(ver.iteration);
  out.gamma = ver.gamma;
  out.steps = ver.steps;
  out.stopped_at_layer = ver.stopped_at_layer.value_or(0);
  std::map<int32_t, const DsbdVerifiedLayer*> verified;  // layer -> its verify.layers entry
  for (const DsbdVerifiedLayer& L : ver.layers) verified[L.layer] = &L;
  std::optional<DsbdLayersDraft> draft;
  if (const std::optional<json> record = rd.draft_record()) draft = rd.parse<DsbdLayersDraft>(*record, "draft");
  std::map<int32_t, const DsbdDraftLayer*> drafted;  // layer -> the draft record's draft_layers entry
  if (draft)
    for (const DsbdDraftLayer& dl : draft->layers) drafted[dl.layer] = &dl;
  int32_t last = out.gamma;
  if (!drafted.empty()) last = std::max(last, drafted.rbegin()->first);
  if (!verified.empty()) last = std::max(last, verified.rbegin()->first);
  for (int32_t l = 1; l <= last; ++l) out.layers.push_back(verified_layer(rd, l, verified, drafted));
  if (ver.extra_layer) extra_layer(rd, *ver.extra_layer, out);
}

void accumulate(const DsbdLayersVerify& ver, int32_t step, AcceptanceSeries& s) {
  s.per_step.emplace_back(step, ver.steps);
  for (const DsbdVerifiedLayer& L : ver.layers) {
    LayerAcceptance* a = acceptance_layer_in(s, L.layer);
    if (!a) continue;
    ++a->verified;
    a->passed += L.passed ? 1 : 0;
    a->predicted_sum += L.predicted_accept;
    a->width_sum += L.width;
    for (const DsbdDraftDecision& d : L.drafts) {
      ++a->tested;
      a->accepted += d.accepted ? 1 : 0;
    }
  }
}

// Narration, in the paper's terms (Algorithm 1): a layer passes when
// W_L^(l) of its drafts are accepted; the first layer short of it stops the
// verification and the missing beams are sampled from the residual.
// "; <nodes><after>" when there are any.
void narrate_group(NarrationBuilder& b, const char* before, const std::vector<std::pair<int32_t, int32_t>>& nodes, const char* after) {
  if (nodes.empty()) return;
  verify_narrate_nodes(b.text(before), nodes);
  b.text(after);
}

NarrationSentence narrate_verified_layer(const VerifyInfo& I, const VerifyLayer& L, NarrationBuilder b) {
  const auto accepted = verify_chip_nodes(L, Decision::accepted);
  const auto rejected = verify_chip_nodes(L, Decision::rejected);
  const auto untested = verify_chip_nodes(L, Decision::untested);
  const auto orphans = verify_chip_nodes(L, Decision::parent_rejected);
  b.text("Layer " + std::to_string(L.layer) + ": ");
  if (accepted.empty()) b.text("no draft accepted");
  else verify_narrate_nodes(b.text("accepted "), accepted);
  const int32_t n = L.count(Decision::accepted);
  if (L.width >= 0) b.text(" (" + std::to_string(n) + " of W_L = " + std::to_string(L.width) + ")");
  narrate_group(b, "; rejected ", rejected, " (u >= accept probability)");
  narrate_group(b, "; ", untested, " not tested (W_L was reached first)");
  narrate_group(b, "; ", orphans, " rejected because its parent beam was");
  if (L.passed) b.text(": the layer passes.");
  else b.text(L.layer == I.stopped_at_layer ? ": short of W_L, so verification stops at this layer" : ": the layer does not pass");
  const auto residual = verify_chip_nodes(L, Decision::sampled_residual);
  const auto target = verify_chip_nodes(L, Decision::sampled_target);
  narrate_group(b, "; ", residual, " sampled from the residual norm(max(0, p' - q))");
  narrate_group(b, "; ", target, " sampled from p_beam");
  if (!L.passed) b.text(".");
  return b.take();
}

std::vector<NarrationSentence> narrate(const VerifyInfo& I, const StepView& v, const TraceReplay& r) {
  std::vector<NarrationSentence> out;
  const std::string it = I.iteration >= 0 ? " (iteration " + std::to_string(I.iteration) + ")" : "";
  if (I.draft) {
    NarrationBuilder head(v, r, "verify");
    head.text("DSBD draft" + it + ": the draft model proposes " + std::to_string(I.layers.size()) + " layer(s) of draft beams");
    head.text(I.verify_step >= 0 ? ", verified by the target at step " + std::to_string(I.verify_step) + "." : ".");
    out.push_back(head.take());
    for (const VerifyLayer& L : I.layers) {
      NarrationBuilder b(v, r, "verify");
      verify_narrate_nodes(b.text("Draft layer " + std::to_string(L.layer) + ": "), verify_chip_nodes(L, Decision::drafted));
      out.push_back(b.text(".").take());
    }
    return out;
  }
  NarrationBuilder head(v, r, "verify");
  head.text("DSBD verification" + it + ": the target tests the drafts layer by layer; a layer passes when W_L of its drafts are accepted.");
  out.push_back(head.take());
  for (const VerifyLayer& L : I.layers) {
    NarrationBuilder b(v, r, "verify");
    if (L.extra) {
      b.text("Every layer passed: W = " + std::to_string(L.width) + " beams are drawn from p_beam at layer " + std::to_string(L.layer) + ": ");
      verify_narrate_nodes(b, verify_chip_nodes(L, Decision::sampled_target));
      out.push_back(b.text(".").take());
    } else if (!L.verified) {
      b.text("Layer " + std::to_string(L.layer) + " is not verified (verification stopped at layer " + std::to_string(I.stopped_at_layer) + "): its drafts ");
      verify_narrate_nodes(b, verify_chip_nodes(L, Decision::not_verified));
      out.push_back(b.text(" are discarded.").take());
    } else {
      out.push_back(narrate_verified_layer(I, L, std::move(b)));
    }
  }
  if (I.steps >= 0) out.push_back(NarrationBuilder(v, r, "verify").text("This iteration produces " + std::to_string(I.steps) + " token(s).").take());
  return out;
}

}  // namespace
TRIESCOPE_REGISTER_VERIFY_KIND(verify_kind_spec<DsbdLayersVerify>(
    "DSBD (Algorithm 1): draft beams per layer, W_L^(l) acceptances per layer, residual and extra-layer samples",
    read_verify, accumulate, narrate, typeid(DsbdLayerVerifier), read_draft));
}  // namespace triescope
