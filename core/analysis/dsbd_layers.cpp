// Verify kind "dsbd_layers" (DSBD, Algorithm 1; core/decode/dsbd.cpp): a
// draft step's draft_layers[] (the W_S draft beams per layer), then a verify
// step's verify.layers[] (W_L^(l), the tested drafts with accept_prob / u /
// p / q, the drafts rejected because their parent was, the beams sampled
// when the layer was short), stopped_at_layer and extra_layer.
#include <map>
#include <set>

#include "core/analysis/verify_read.h"
#include "core/decode/dsbd.h"
#include "core/trace/trace.h"

namespace triescope {
namespace {

using nlohmann::json;

void read_draft(VerifyRead& rd, VerifyInfo& out) {
  const json& layers = rd.arr(rd.view.extra, "draft_layers", "draft");
  for (size_t k = 0; k < layers.size(); ++k) {
    const std::string path = "draft_layers[" + std::to_string(k) + "]";
    VerifyLayer L;
    L.layer = rd.i(layers[k], "layer", path, static_cast<int32_t>(k) + 1);
    L.verified = false;
    const json& beams = rd.arr(layers[k], "beams", path);
    for (size_t j = 0; j < beams.size(); ++j) {
      const std::string bp = path + ".beams[" + std::to_string(j) + "]";
      VerifyChip c = rd.chip(rd.i(beams[j], "node", bp), Decision::drafted);
      c.beam = rd.i(beams[j], "beam", bp, static_cast<int32_t>(j));
      c.parent_beam = rd.i(beams[j], "parent_beam", bp);
      if (c.token < 0) c.token = rd.i(beams[j], "token", bp);
      c.q = rd.d(beams[j], "q_beam", bp);
      L.chips.push_back(c);
    }
    out.layers.push_back(std::move(L));
  }
  out.gamma = static_cast<int32_t>(out.layers.size());
}

// One layer of verify.layers[] (null when the layer was not verified) with
// its tested drafts by beam and the nodes rejected because their parent was.
struct TestedLayer {
  const json* record = nullptr;
  std::string path;
  std::map<int32_t, const json*> tested;  // beam -> drafts[] entry
  std::set<int32_t> parent_rejected;
};

TestedLayer tested_layer(VerifyRead& rd, const json& vlayers, const std::map<int32_t, size_t>& vl_of, int32_t l, VerifyLayer& L) {
  TestedLayer t;
  const auto vit = vl_of.find(l);
  if (vit == vl_of.end()) return t;
  t.record = &vlayers[vit->second];
  t.path = "verify.layers[" + std::to_string(vit->second) + "]";
  L.width = rd.i(*t.record, "width", t.path);
  L.surviving = rd.i(*t.record, "surviving_drafts", t.path);
  L.predicted = rd.d(*t.record, "predicted_accept", t.path);
  L.passed = rd.b(*t.record, "passed", t.path);
  const json& ds = rd.arr(*t.record, "drafts", t.path);
  for (size_t j = 0; j < ds.size(); ++j) t.tested[rd.i(ds[j], "beam", t.path + ".drafts[" + std::to_string(j) + "]", -1 - static_cast<int32_t>(j))] = &ds[j];
  for (int32_t n : rd.ints(*t.record, "parent_rejected", t.path)) t.parent_rejected.insert(n);
  return t;
}

void decide(VerifyRead& rd, VerifyChip& c, const json& d, const std::string& dp) {
  c.accept_prob = rd.d(d, "accept_prob", dp);
  c.u = rd.d(d, "u", dp);
  c.p = rd.d(d, "p", dp);
  c.q = rd.d(d, "q", dp);
  c.decision = rd.b(d, "accepted", dp) ? Decision::accepted : Decision::rejected;
}

// The iteration's draft beams of layer l (from the draft record), so the
// drafts that were never tested are shown too; returns the beams shown.
std::set<int32_t> drafted_chips(VerifyRead& rd, const json& layer, int32_t l, const TestedLayer& t, VerifyLayer& L) {
  std::set<int32_t> shown;
  const json& beams = rd.arr(layer, "beams", "draft.draft_layers");
  for (size_t j = 0; j < beams.size(); ++j) {
    const std::string bp = "draft.draft_layers[" + std::to_string(l - 1) + "].beams[" + std::to_string(j) + "]";
    VerifyChip c = rd.chip(rd.i(beams[j], "node", bp), Decision::not_verified);
    c.beam = rd.i(beams[j], "beam", bp, static_cast<int32_t>(j));
    c.parent_beam = rd.i(beams[j], "parent_beam", bp);
    c.q = rd.d(beams[j], "q_beam", bp);
    if (t.record) {
      if (auto it = t.tested.find(c.beam); it != t.tested.end()) decide(rd, c, *it->second, t.path + ".drafts");
      else c.decision = t.parent_rejected.count(c.node) ? Decision::parent_rejected : Decision::untested;
    }
    shown.insert(c.beam);
    L.chips.push_back(c);
  }
  return shown;
}

void sampled_chips(VerifyRead& rd, const json& sm, const std::string& path, bool by_source, VerifyLayer& L) {
  for (size_t j = 0; j < sm.size(); ++j) {
    const std::string sp = path + (by_source ? "[" + std::to_string(j) + "]" : std::string());
    const bool residual = by_source && sm[j].is_object() && sm[j].contains("from") && sm[j]["from"].is_string() && sm[j]["from"] == "residual";
    VerifyChip c = rd.chip(rd.i(sm[j], "node", sp), residual ? Decision::sampled_residual : Decision::sampled_target);
    c.prob = rd.d(sm[j], "prob", sp);
    L.chips.push_back(c);
  }
}

VerifyLayer verified_layer(VerifyRead& rd, int32_t l, const json& vlayers, const std::map<int32_t, size_t>& vl_of,
                           const std::map<int32_t, const json*>& drafted) {
  VerifyLayer L;
  L.layer = l;
  const TestedLayer t = tested_layer(rd, vlayers, vl_of, l, L);
  L.verified = t.record != nullptr;
  const auto dit = drafted.find(l);
  const std::set<int32_t> shown = dit != drafted.end() ? drafted_chips(rd, *dit->second, l, t, L) : std::set<int32_t>();
  // Without the draft record (or for beams it lacks): the tested drafts and
  // the parent-rejected nodes as the verify record has them.
  for (const auto& [beam, d] : t.tested)
    if (!shown.count(beam)) {
      VerifyChip c = rd.chip(rd.i(*d, "node", t.path + ".drafts"), Decision::accepted);
      c.beam = beam;
      decide(rd, c, *d, t.path + ".drafts");
      L.chips.push_back(c);
    }
  if (dit == drafted.end())
    for (int32_t n : t.parent_rejected) L.chips.push_back(rd.chip(n, Decision::parent_rejected));
  if (t.record) sampled_chips(rd, rd.arr(*t.record, "sampled", t.path), t.path + ".sampled", true, L);
  return L;
}

// Lines 32-34: every layer passed, W beams from p_beam^(g+1).
void extra_layer(VerifyRead& rd, const json& ex, int32_t last, VerifyInfo& out) {
  VerifyLayer L;
  L.extra = true;
  L.passed = true;
  L.layer = rd.i(ex, "layer", "verify.extra_layer", last + 1);
  L.width = rd.i(ex, "width", "verify.extra_layer");
  sampled_chips(rd, rd.arr(ex, "sampled", "verify.extra_layer"), "verify.extra_layer.sampled", false, L);
  out.layers.push_back(std::move(L));
}

void read_verify(VerifyRead& rd, const json& ver, VerifyInfo& out) {
  out.iteration = rd.i(ver, "iteration", "verify");
  out.gamma = rd.i(ver, "gamma", "verify");
  out.steps = rd.i(ver, "steps", "verify");
  if (ver.contains("stopped_at_layer") && !ver["stopped_at_layer"].is_null()) out.stopped_at_layer = rd.i(ver, "stopped_at_layer", "verify", 0);
  const json& vlayers = rd.arr(ver, "layers", "verify");
  std::map<int32_t, size_t> vl_of;  // layer -> index in verify.layers
  for (size_t k = 0; k < vlayers.size(); ++k) vl_of[rd.i(vlayers[k], "layer", "verify.layers[" + std::to_string(k) + "]", static_cast<int32_t>(k) + 1)] = k;
  std::map<int32_t, const json*> drafted;  // layer -> the draft record's draft_layers[] entry
  static const json none = json::array();
  const std::optional<json> draft = rd.draft_record();
  const json& dl = draft ? rd.arr(*draft, "draft_layers", "draft") : none;
  for (size_t k = 0; k < dl.size(); ++k) drafted[rd.i(dl[k], "layer", "draft.draft_layers[" + std::to_string(k) + "]", static_cast<int32_t>(k) + 1)] = &dl[k];
  int32_t last = out.gamma;
  if (!drafted.empty()) last = std::max(last, drafted.rbegin()->first);
  if (!vl_of.empty()) last = std::max(last, vl_of.rbegin()->first);
  for (int32_t l = 1; l <= last; ++l) out.layers.push_back(verified_layer(rd, l, vlayers, vl_of, drafted));
  if (ver.contains("extra_layer") && ver["extra_layer"].is_object()) extra_layer(rd, ver["extra_layer"], last, out);
}

void accumulate(const json& ver, int32_t step, AcceptanceSeries& s) {
  acceptance_add_steps(ver, step, s);
  if (!ver.contains("layers") || !ver["layers"].is_array()) return;
  for (const json& L : ver["layers"]) {
    const auto l = acceptance_layer_of(L);
    if (!l) continue;
    LayerAcceptance& a = acceptance_layer(s, *l);
    ++a.verified;
    a.passed += acceptance_flag(L, "passed") ? 1 : 0;
    a.predicted_sum += acceptance_num(L, "predicted_accept");
    a.width_sum += acceptance_num(L, "width");
    if (L.contains("drafts") && L["drafts"].is_array())
      for (const json& d : L["drafts"]) {
        ++a.tested;
        a.accepted += acceptance_flag(d, "accepted") ? 1 : 0;
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

VerifyKindSpec spec() {
  VerifyKindSpec k;
  k.name = kVerifyDsbdLayers;
  k.description = "DSBD (Algorithm 1): draft beams per layer, W_L^(l) acceptances per layer, residual and extra-layer samples";
  k.read_draft = read_draft;
  k.read_verify = read_verify;
  k.accumulate = accumulate;
  k.rows = [](const VerifyInfo& info, const StepView&) { return verify_layer_rows(info); };
  k.summary = verify_layer_summary;
  k.narrate = narrate;
  k.verifier = typeid(DsbdLayerVerifier);
  return k;
}

}  // namespace
TRIESCOPE_REGISTER_VERIFY_KIND(spec());
}  // namespace triescope
