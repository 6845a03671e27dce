// The verify payloads (core/trace/speculative_chain_verify_record.h,
// dsbd_layers_verify_record.h, lookahead_candidates_verify_record.h): every
// verify object and DSBD draft step of the sample traces reads and writes
// back the same JSON, a corrupted field is an error naming it, and each kind's
// spec is registered with its payload type, so a corrupted record is named
// in VerifyInfo::error.
#include <catch2/catch.hpp>

#include <map>
#include <typeindex>

#include "core/analysis/verify_info.h"
#include "core/analysis/verify_kind.h"
#include "core/trace/dsbd_layers_verify_record.h"
#include "core/trace/lookahead_candidates_verify_record.h"
#include "core/trace/speculative_chain_verify_record.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "tests/common/error_of.h"
#include "tests/core/sample_traces.h"

using namespace triescope;
using testing::error_of;

namespace {

// `verify` through its kind's payload: to_json of from_json, and from_json
// of that again.
template <class Payload>
void check_round_trip(const json& verify, const std::string& where) {
  const Payload p = Payload::from_json(verify, where);
  CHECK(p.to_json() == verify);
  CHECK(p.to_json().dump() == verify.dump());  // byte for byte, as the trace holds it
  CHECK(Payload::from_json(p.to_json(), "again") == p);
}

// The first verify object of `kind` in the sample `sample`.
json first_verify(const std::string& sample, const char* kind) {
  for (const json& r : testing::sample_trace(sample).records)
    if (r.value("kind", "") == "step" && r.contains("verify") && r["verify"].value("kind", "") == kind) return r["verify"];
  FAIL(sample << " has no verify object of kind " << kind);
  return {};
}

// The sample's records with `edit` applied to the verify object of step `step`.
std::vector<json> records_edited(const std::string& sample, int32_t step, const std::function<void(json&)>& edit) {
  std::vector<json> records = testing::sample_trace(sample).records;
  for (json& r : records)
    if (r.value("kind", "") == "step" && r.value("step", -1) == step) edit(r);
  return records;
}

}  // namespace

TEST_CASE("verify payloads: every sample trace's verify objects read and write back unchanged", "[trace][records][verify]") {
  std::map<std::string, size_t> read;
  size_t drafts = 0;
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    for (const json& r : t.records) {
      if (r.value("kind", "") != "step") continue;
      const std::string where = t.name + ": step " + std::to_string(r.value("step", -1));
      CAPTURE(where);
      if (r.contains(kDsbdDraftLayersField)) {
        const DsbdLayersDraft d = DsbdLayersDraft::from_json(r, where);
        CHECK(d.to_json() == r[kDsbdDraftLayersField]);
        CHECK(d.to_json().dump() == r[kDsbdDraftLayersField].dump());
        drafts += !d.layers.empty();  // the last iteration may draft none
      }
      if (!r.contains("verify")) continue;
      const json& v = r["verify"];
      const std::string kind = v.value("kind", "");
      if (kind == SpeculativeChainVerify::kKind) check_round_trip<SpeculativeChainVerify>(v, where);
      else if (kind == DsbdLayersVerify::kKind) check_round_trip<DsbdLayersVerify>(v, where);
      else if (kind == LookaheadCandidatesVerify::kKind) check_round_trip<LookaheadCandidatesVerify>(v, where);
      else FAIL("unknown verify kind " << kind);
      ++read[kind];
    }
  }
  for (const char* kind : {kVerifySpeculativeChain, kVerifyDsbdLayers, kVerifyLookahead}) {
    CAPTURE(kind);
    CHECK(read[kind] > 2);
  }
  CHECK(drafts > 2);
}

TEST_CASE("verify payloads: the DSBD record's optional parts are read as written", "[trace][records][verify]") {
  // Across the DSBD samples: a layer that fell short (sampled beams from the
  // residual and p_beam, stopped_at_layer set) and an iteration whose every
  // layer passed (extra_layer set).
  bool short_layer = false, extra = false, residual = false, p_beam = false;
  for (const char* sample : {"dsbd_figure3.json", "dsbd_synthetic.json"})
    for (const json& r : testing::sample_trace(sample).records) {
      if (!r.contains("verify")) continue;
      const DsbdLayersVerify v = DsbdLayersVerify::from_json(r["verify"], sample);
      CHECK(v.stopped_at_layer.has_value() != v.extra_layer.has_value());
      extra = extra || v.extra_layer.has_value();
      for (const DsbdVerifiedLayer& L : v.layers) {
        short_layer = short_layer || !L.passed;
        CHECK(L.passed == L.sampled.empty());
        for (const DsbdSampledBeam& s : L.sampled) {
          residual = residual || s.from == DsbdSampledFrom::residual;
          p_beam = p_beam || s.from == DsbdSampledFrom::p_beam;
        }
      }
      if (v.extra_layer)
        for (const DsbdSampledBeam& s : v.extra_layer->sampled) CHECK(s.from == DsbdSampledFrom::unnamed);
    }
  CHECK(short_layer);
  CHECK(extra);
  CHECK(residual);
  CHECK(p_beam);
}

TEST_CASE("verify payloads: a missing or mistyped field is an error naming it", "[trace][records][verify]") {
  const json spec = first_verify("speculative_synthetic.json", kVerifySpeculativeChain);
  const json dsbd = first_verify("dsbd_figure3.json", kVerifyDsbdLayers);
  const json look = first_verify("lookahead_repetitive.json", kVerifyLookahead);
  REQUIRE(spec["decisions"].size() >= 1);
  REQUIRE(dsbd["layers"].size() >= 1);
  REQUIRE(dsbd["layers"][0]["drafts"].size() >= 2);
  auto edited = [](json j, const std::function<void(json&)>& edit) {
    edit(j);
    return j;
  };
  CHECK(error_of([&] { SpeculativeChainVerify::from_json(edited(spec, [](json& j) { j["decisions"][0]["u"] = "x"; }), "t.jsonl:4: verify"); }) ==
        "t.jsonl:4: verify: field decisions[0].u must be a number, got \"x\"");
  CHECK(error_of([&] { SpeculativeChainVerify::from_json(edited(spec, [](json& j) { j.erase("steps"); }), "w"); }) == "w: field steps is missing");
  CHECK(error_of([&] { SpeculativeChainVerify::from_json(edited(spec, [](json& j) { j["decisions"][0]["layer"] = 0; }), "w"); }) ==
        "w: field decisions[0].layer must be in [1, 2147483647], got 0");
  CHECK(error_of([&] { SpeculativeChainVerify::from_json(edited(spec, [](json& j) { j["kind"] = "dsbd_layers"; }), "w"); }) ==
        "w: field kind must be \"speculative_chain\", got \"dsbd_layers\"");
  CHECK(error_of([&] { DsbdLayersVerify::from_json(edited(dsbd, [](json& j) { j["layers"][0]["drafts"][1]["accepted"] = 1; }), "w"); }) ==
        "w: field layers[0].drafts[1].accepted must be true or false, got 1");
  CHECK(error_of([&] { DsbdLayersVerify::from_json(edited(dsbd, [](json& j) { j.erase("extra_layer"); }), "w"); }) ==
        "w: field extra_layer is missing");
  CHECK(error_of([&] { DsbdLayersVerify::from_json(edited(dsbd, [](json& j) { j["extra_layer"] = 3; }), "w"); }) ==
        "w: field extra_layer must be an object, got 3");
  CHECK(error_of([&] { DsbdLayersVerify::from_json(edited(dsbd, [](json& j) { j["stopped_at_layer"] = -2; }), "w"); }) ==
        "w: field stopped_at_layer must be in [0, 2147483647], got -2");
  CHECK(error_of([&] { LookaheadCandidatesVerify::from_json(edited(look, [](json& j) { j["window_nodes"] = json::array({1, "2"}); }), "w"); }) ==
        "w: field window_nodes[1] must be an integer in [0, 2147483647], got \"2\"");
  CHECK(error_of([&] { LookaheadCandidatesVerify::from_json(edited(look, [](json& j) { j["candidates"] = json::array({json::array({3}), 4}); }), "w"); }) ==
        "w: field candidates[1] must be an array, got 4");
  CHECK(error_of([&] { LookaheadCandidatesVerify::from_json(json::array(), "w"); }) == "w must be an object, got []");
  for (const json* v : {&spec, &dsbd, &look}) {
    const std::string kind = (*v)["kind"];
    CAPTURE(kind);
    CHECK(error_of([&] {
            if (kind == kVerifySpeculativeChain) SpeculativeChainVerify::from_json(*v, "w");
            else if (kind == kVerifyDsbdLayers) DsbdLayersVerify::from_json(*v, "w");
            else LookaheadCandidatesVerify::from_json(*v, "w");
          }) == "no error");
  }
}

TEST_CASE("verify payloads: a DSBD draft step's draft_layers with a bad beam is an error naming it", "[trace][records][verify]") {
  for (const json& r : testing::sample_trace("dsbd_figure3.json").records) {
    if (!r.contains(kDsbdDraftLayersField)) continue;
    json bad = r;
    bad[kDsbdDraftLayersField][0]["beams"][1]["q_beam"] = nullptr;
    CHECK(error_of([&] { DsbdLayersDraft::from_json(bad, "step 1: draft"); }) ==
          "step 1: draft: draft_layers[0]: field beams[1].q_beam must be a number, got null");
    return;
  }
  FAIL("dsbd_figure3 has no draft step");
}

TEST_CASE("verify kinds: each kind's spec is registered with its payload type", "[trace][records][verify]") {
  const std::map<std::string, std::type_index> payloads = {{SpeculativeChainVerify::kKind, typeid(SpeculativeChainVerify)},
                                                           {DsbdLayersVerify::kKind, typeid(DsbdLayersVerify)},
                                                           {LookaheadCandidatesVerify::kKind, typeid(LookaheadCandidatesVerify)}};
  for (const auto& [kind, type] : payloads) {
    CAPTURE(kind);
    const VerifyKindSpec* spec = verify_kind_find(kind);
    REQUIRE(spec);
    CHECK(spec->payload == type);
  }
}

TEST_CASE("verify kinds: a corrupted verify object is named in the step's VerifyInfo, the series skips it", "[trace][records][verify]") {
  struct Case {
    const char* sample;
    int32_t step;       // a verify step
    const char* field;  // a field of its verify object, made a string
    const char* error;
  };
  const Case cases[] = {
      {"speculative_synthetic.json", 2, "accepted", "step 2: verify: field accepted must be an integer, got \"x\""},
      {"dsbd_figure3.json", 2, "gamma", "step 2: verify: field gamma must be an integer, got \"x\""},
      {"lookahead_repetitive.json", 1, "accepted_tokens", "step 1: verify: field accepted_tokens must be an array, got \"x\""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.sample);
    const TraceReplay clean(testing::sample_trace(c.sample).records, c.sample);
    const int32_t step = c.step;
    const VerifyInfo ok = verify_info(clean.at(step), clean);
    REQUIRE(ok.error.empty());
    REQUIRE(!ok.empty());
    const TraceReplay bad(records_edited(c.sample, step, [&](json& r) { r["verify"][c.field] = "x"; }), c.sample);
    const VerifyInfo info = verify_info(bad.at(step), bad);
    CHECK(info.error == c.error);
    CHECK(info.kind == ok.kind);
    const AcceptanceSeries all = acceptance_series(clean), skipped = acceptance_series(bad);
    CHECK(skipped.per_step.size() + 1 == all.per_step.size());
  }
}
