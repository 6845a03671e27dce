#include "core/trace/dsbd_layers_verify_record.h"

#include <climits>

#include "core/trace/record_fields.h"

namespace triescope {

using nlohmann::json;

namespace {

constexpr const char* kLayer = "layer";
constexpr const char* kBeams = "beams";
constexpr const char* kBeam = "beam";
constexpr const char* kNode = "node";
constexpr const char* kParentBeam = "parent_beam";
constexpr const char* kToken = "token";
constexpr const char* kQBeam = "q_beam";
constexpr const char* kIteration = "iteration";
constexpr const char* kGamma = "gamma";
constexpr const char* kSteps = "steps";
constexpr const char* kStoppedAtLayer = "stopped_at_layer";
constexpr const char* kLayers = "layers";
constexpr const char* kExtraLayer = "extra_layer";
constexpr const char* kWidth = "width";
constexpr const char* kSurvivingDrafts = "surviving_drafts";
constexpr const char* kPredictedAccept = "predicted_accept";
constexpr const char* kDrafts = "drafts";
constexpr const char* kParentRejected = "parent_rejected";
constexpr const char* kPassed = "passed";
constexpr const char* kSampled = "sampled";
constexpr const char* kAcceptProb = "accept_prob";
constexpr const char* kU = "u";
constexpr const char* kAccepted = "accepted";
constexpr const char* kP = "p";
constexpr const char* kQ = "q";
constexpr const char* kFrom = "from";
constexpr const char* kProb = "prob";
constexpr const char* kFromResidual = "residual";
constexpr const char* kFromPBeam = "p_beam";

json sampled_json(const std::vector<DsbdSampledBeam>& sampled) {
  json out = json::array();
  for (const DsbdSampledBeam& s : sampled) {
    json e = {{kNode, s.node}, {kProb, s.prob}};
    if (s.from != DsbdSampledFrom::unnamed) e[kFrom] = s.from == DsbdSampledFrom::residual ? kFromResidual : kFromPBeam;
    out.push_back(std::move(e));
  }
  return out;
}

// `named`: each entry names where it was drawn from (a short layer's).
std::vector<DsbdSampledBeam> sampled_parse(const RecordFields& f, bool named) {
  std::vector<DsbdSampledBeam> out;
  for (size_t i = 0; i < f.size(kSampled); ++i) {
    const RecordFields s = f.entry(kSampled, i);
    DsbdSampledBeam b{s.int32(kNode), DsbdSampledFrom::unnamed, s.number(kProb)};
    if (named) b.from = s.one_of(kFrom, {kFromResidual, kFromPBeam}) == 0 ? DsbdSampledFrom::residual : DsbdSampledFrom::p_beam;
    out.push_back(b);
  }
  return out;
}

json layer_json(const DsbdVerifiedLayer& L) {
  json ds = json::array();
  for (const DsbdDraftDecision& d : L.drafts)
    ds.push_back({{kBeam, d.beam}, {kNode, d.node}, {kAcceptProb, d.accept_prob}, {kU, d.u}, {kAccepted, d.accepted}, {kP, d.p}, {kQ, d.q}});
  json j = {{kLayer, L.layer},       {kWidth, L.width}, {kSurvivingDrafts, L.surviving_drafts}, {kPredictedAccept, L.predicted_accept},
            {kDrafts, std::move(ds)}, {kParentRejected, L.parent_rejected}, {kPassed, L.passed}};
  if (!L.passed) j[kSampled] = sampled_json(L.sampled);
  return j;
}

DsbdVerifiedLayer layer_parse(const RecordFields& f) {
  DsbdVerifiedLayer L;
  L.layer = f.int32(kLayer, 1);
  L.width = f.int32(kWidth);
  L.surviving_drafts = f.int32(kSurvivingDrafts);
  L.predicted_accept = f.number(kPredictedAccept);
  for (size_t i = 0; i < f.size(kDrafts); ++i) {
    const RecordFields d = f.entry(kDrafts, i);
    L.drafts.push_back({d.int32(kBeam), d.int32(kNode), d.number(kAcceptProb), d.number(kU), d.flag(kAccepted), d.number(kP), d.number(kQ)});
  }
  L.parent_rejected = f.ints(kParentRejected, INT32_MIN);
  L.passed = f.flag(kPassed);
  if (!L.passed) L.sampled = sampled_parse(f, true);
  return L;
}

}  // namespace

json DsbdDraftLayer::to_json() const {
  json bs = json::array();
  for (const DsbdDraftBeam& b : beams)
    bs.push_back({{kBeam, b.beam}, {kNode, b.node}, {kParentBeam, b.parent_beam}, {kToken, b.token}, {kQBeam, b.q_beam}});
  return {{kLayer, layer}, {kBeams, std::move(bs)}};
}

DsbdDraftLayer DsbdDraftLayer::from_json(const json& j, const std::string& where) {
  const RecordFields f(j, where);
  DsbdDraftLayer L;
  L.layer = f.int32(kLayer, 1);
  for (size_t i = 0; i < f.size(kBeams); ++i) {
    const RecordFields b = f.entry(kBeams, i);
    L.beams.push_back({b.int32(kBeam), b.int32(kNode), b.int32(kParentBeam), b.int32(kToken), b.number(kQBeam)});
  }
  return L;
}

json DsbdLayersDraft::to_json() const {
  json out = json::array();
  for (const DsbdDraftLayer& L : layers) out.push_back(L.to_json());
  return out;
}

DsbdLayersDraft DsbdLayersDraft::from_json(const json& step, const std::string& where) {
  DsbdLayersDraft d;
  const RecordFields f(step, where);
  if (!f.has(kDsbdDraftLayersField)) return d;
  for (size_t i = 0; i < f.size(kDsbdDraftLayersField); ++i)
    d.layers.push_back(DsbdDraftLayer::from_json(step[kDsbdDraftLayersField][i], where + ": " + f.field(kDsbdDraftLayersField) + "[" + std::to_string(i) + "]"));
  return d;
}

json DsbdLayersVerify::to_json() const {
  json ls = json::array();
  for (const DsbdVerifiedLayer& L : layers) ls.push_back(layer_json(L));
  json extra;  // null unless every layer passed
  if (extra_layer) extra = {{kLayer, extra_layer->layer}, {kWidth, extra_layer->width}, {kSampled, sampled_json(extra_layer->sampled)}};
  return {{"kind", kKind},
          {kIteration, iteration},
          {kGamma, gamma},
          {kSteps, steps},
          {kStoppedAtLayer, stopped_at_layer ? json(*stopped_at_layer) : json()},
          {kLayers, std::move(ls)},
          {kExtraLayer, std::move(extra)}};
}

DsbdLayersVerify DsbdLayersVerify::from_json(const json& j, const std::string& where) {
  const RecordFields f(j, where);
  f.kind_check(kKind);
  DsbdLayersVerify v;
  v.iteration = f.integer(kIteration, 0, INT32_MAX);
  v.gamma = f.int32(kGamma);
  v.steps = f.int32(kSteps);
  if (!f.null(kStoppedAtLayer)) v.stopped_at_layer = f.int32(kStoppedAtLayer);
  for (size_t i = 0; i < f.size(kLayers); ++i) v.layers.push_back(layer_parse(f.entry(kLayers, i)));
  if (!f.null(kExtraLayer)) {
    const RecordFields e = f.object(kExtraLayer);
    v.extra_layer = DsbdExtraLayer{e.int32(kLayer, 1), e.int32(kWidth), sampled_parse(e, false)};
  }
  return v;
}

}  // namespace triescope
