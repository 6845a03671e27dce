// The typed trace groups (core/trace/kv_record.h, forward_record.h, gc_record.h,
// keyframe_record.h, header_record.h, summary_record.h):
// each group read from every sample trace writes back the same JSON, and a
// missing or mistyped field is an error naming the field.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/trace/forward_record.h"
#include "core/trace/gc_record.h"
#include "core/trace/header_record.h"
#include "core/trace/keyframe_record.h"
#include "core/trace/kv_record.h"
#include "core/trace/summary_record.h"
#include "core/trace/trace.h"
#include "tests/common/error_of.h"
#include "tests/core/sample_traces.h"

using namespace triescope;
using testing::error_of;

namespace {

// Every pass a step record holds: its forward, draft_forward and draft_forwards entries.
std::vector<const json*> passes_of(const json& rec) {
  std::vector<const json*> out;
  for (const char* key : {kForwardField, kDraftForwardField})
    if (rec.contains(key)) out.push_back(&rec[key]);
  if (rec.contains(kDraftForwardsField))
    for (const json& p : rec[kDraftForwardsField]) out.push_back(&p);
  return out;
}

json figure1_step(int32_t step) {
  for (const json& r : testing::sample_trace("figure1_once_upon_a_time.json").records)
    if (r.value("kind", "") == "step" && r.value("step", -1) == step) return r;
  FAIL("figure1 has no step " << step);
  return {};
}

}  // namespace

TEST_CASE("kv record: every sample trace's kv reads and writes back unchanged", "[trace][records]") {
  std::set<std::string> optional_seen;
  size_t read = 0;
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    for (const json& r : t.records) {
      if (r.value("kind", "") != "step" || !r.contains(kKvField)) continue;
      CAPTURE(t.name, r.value("step", -1));
      const json& kv = r[kKvField];
      const KvRecord k = KvRecord::from_json(kv, t.name + ": kv");
      CHECK(k.to_json() == kv);
      CHECK(k.to_json().dump() == kv.dump());  // byte for byte, as the trace holds it
      CHECK(KvRecord::from_json(k.to_json(), "again") == k);
      for (auto& [key, value] : kv.items())
        if (key != "slots" && key != "peak") optional_seen.insert(key);
      ++read;
    }
  }
  CHECK(read > 100);
  // The optional figures the samples write are read (none dropped as
  // unknown); live_samples (a multigen path no sample takes) and the engine
  // figures are covered by the next case.
  for (const char* key : {"bytes", "batch_slots", "batch_bytes", "live_beams"}) {
    CAPTURE(key);
    CHECK(optional_seen.count(key) == 1);
  }
}

TEST_CASE("kv record: optional figures are left out, and each one written is read back", "[trace][records]") {
  KvRecord k{.slots = 7, .peak = 9};
  CHECK(k.to_json() == json{{"slots", 7}, {"peak", 9}});
  k.engine_cells = 12;
  k.live_samples = 3;
  const json j = k.to_json();
  CHECK(j.size() == 4);
  CHECK(KvRecord::from_json(j, "t") == k);
  KvRecord other = k;
  other.engine_cells = 13;
  CHECK_FALSE(KvRecord::from_json(j, "t") == other);
  // A field no reader knows is ignored, as every reader does.
  json extra = j;
  extra["future_field"] = "x";
  CHECK(KvRecord::from_json(extra, "t") == k);
}

TEST_CASE("kv record: a missing or mistyped field is an error naming it", "[trace][records]") {
  const json kv = figure1_step(2)[kKvField];
  REQUIRE(kv.contains("batch_slots"));
  auto without = [&](const char* key) {
    json j = kv;
    j.erase(key);
    return j;
  };
  auto with = [&](const char* key, json value) {
    json j = kv;
    j[key] = std::move(value);
    return j;
  };
  CHECK(error_of([&] { KvRecord::from_json(without("slots"), "t.jsonl:3: kv"); }) ==
        "t.jsonl:3: kv: field slots is missing (an integer in [0, 16777216])");
  CHECK(error_of([&] { KvRecord::from_json(without("peak"), "t.jsonl:3: kv"); }) ==
        "t.jsonl:3: kv: field peak is missing (an integer in [0, 16777216])");
  CHECK(error_of([&] { KvRecord::from_json(with("peak", "9"), "w"); }) == "w: field peak must be an integer, got \"9\"");
  CHECK(error_of([&] { KvRecord::from_json(with("slots", 2.5), "w"); }) == "w: field slots must be an integer, got 2.5");
  CHECK(error_of([&] { KvRecord::from_json(with("batch_slots", 16777217), "w"); }) ==
        "w: field batch_slots must be in [0, 16777216], got 16777217");
  CHECK(error_of([&] { KvRecord::from_json(with("bytes", -1), "w"); }) == "w: field bytes must be in [0, 9223372036854775807], got -1");
  CHECK(error_of([&] { KvRecord::from_json(with("live_beams", json::array()), "w"); }) == "w: field live_beams must be an integer, got []");
  CHECK(error_of([&] { KvRecord::from_json(json::array({1}), "w"); }) == "w must be an object, got [1]");
  CHECK(error_of([&] { KvRecord::from_json(kv, "w"); }) == "no error");
}

TEST_CASE("forward record: every pass of every sample trace reads and writes back unchanged", "[trace][records]") {
  size_t read = 0, without_queries = 0, drafts = 0;
  ForwardView f;  // reused, as readers do
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    for (const json& r : t.records) {
      if (r.value("kind", "") != "step") continue;
      for (const json* p : passes_of(r)) {
        CAPTURE(t.name, r.value("step", -1));
        forward_view_parse(*p, t.name + ": forward", f);
        CHECK(f.to_json() == *p);
        CHECK(f.to_json().dump() == p->dump());
        ForwardView again;
        forward_view_parse(f.to_json(), "again", again);
        CHECK((again.queries == f.queries && again.positions == f.positions && again.slots == f.slots && again.mask == f.mask));
        without_queries += f.queries.empty();
        drafts += p != &r[kForwardField];
        ++read;
      }
    }
  }
  CHECK(read > 100);
  CHECK(without_queries > 0);  // batch beam search: no tree, no queries
  CHECK(drafts > 0);           // the draft model's passes
}

TEST_CASE("forward record: a missing or mistyped field is an error naming it", "[trace][records]") {
  const json fwd = figure1_step(2)[kForwardField];
  REQUIRE(fwd["positions"].size() >= 2);
  ForwardView f;
  auto parse = [&](json j) { return error_of([&] { forward_view_parse(j, "t.jsonl:4: forward", f); }); };
  json j = fwd;
  j["queries"] = 3;
  CHECK(parse(j) == "t.jsonl:4: forward: field queries must be an array");
  j = fwd;
  j["positions"][1] = "x";
  CHECK(parse(j) == "t.jsonl:4: forward: field positions[1] must be a 32-bit integer, got \"x\"");
  j = fwd;
  j.erase("mask");
  CHECK(parse(j) == "t.jsonl:4: forward needs a mask");
  j = fwd;
  j["slots"].erase(0);
  CHECK(parse(j) == "t.jsonl:4: forward: positions/slots/mask rows disagree in length");
  j = fwd;
  j["mask"]["cols"] = -1;
  CHECK(parse(j) == "t.jsonl:4: forward.mask.cols must be in [0, 16777216], got -1");
  CHECK(parse(json::array()) == "t.jsonl:4: forward must be an object, got []");
  CHECK(parse(fwd) == "no error");
}

TEST_CASE("forward record: a pass without a tree leaves queries out", "[trace][records]") {
  BitMask m(2, 3);
  m.set(0, 0);
  m.set(1, 1);
  const ForwardView f{{}, {0, 0}, {0, 1}, m};
  const json j = f.to_json();
  CHECK_FALSE(j.contains("queries"));
  CHECK(j == json{{"positions", {0, 0}}, {"slots", {0, 1}}, {"mask", trace_mask(m)}});
  CHECK(forward_record_positions(j) == 2);
  CHECK(forward_record_positions(json::array()) == 0);
}

TEST_CASE("gc and keyframe records: every one of every sample trace reads and writes back unchanged", "[trace][records]") {
  size_t gcs = 0, keyframes = 0;
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    for (const json& r : t.records) {
      const std::string kind = r.value("kind", "");
      CAPTURE(t.name, kind, r.value("step", -1));
      if (kind == "gc") {
        const GcRecord g = GcRecord::from_json(r, t.name);
        CHECK(g.to_json().dump() == r.dump());
        CHECK(GcRecord::from_json(g.to_json(), "again") == g);
        ++gcs;
      } else if (kind == "keyframe") {
        const KeyframeRecord k = KeyframeRecord::from_json(r, t.name);
        CHECK(k.to_json().dump() == r.dump());
        ++keyframes;
      }
    }
  }
  CHECK(gcs > 10);
  CHECK(keyframes > 10);
}

TEST_CASE("gc record: the plan's moves, and a bad field is an error naming it", "[trace][records]") {
  CompactionPlan plan;
  plan.old_num_slots = 5;
  plan.src = {0, 2, 4};
  const GcRecord g = GcRecord::from_plan(3, plan);
  CHECK(g.slots_before == 5);
  CHECK(g.slots_after == 3);
  CHECK(g.moves == std::vector<std::pair<int32_t, int32_t>>{{0, 0}, {2, 1}, {4, 2}});
  const json j = g.to_json();
  CHECK(j == json{{"kind", "gc"}, {"step", 3}, {"slots_before", 5}, {"slots_after", 3}, {"moves", {{0, 0}, {2, 1}, {4, 2}}}});
  auto err = [](json x) { return error_of([&] { GcRecord::from_json(x, "t.jsonl:4"); }); };
  json x = j;
  x["slots_before"] = "x";
  CHECK(err(x) == "t.jsonl:4: gc: field slots_before must be an integer");
  x["slots_before"] = 2000000000;
  CHECK(err(x) == "t.jsonl:4: gc: field slots_before must be in [0, 16777216], got 2000000000");
  x = j;
  x["moves"][1] = {2, 5};
  CHECK(err(x) == "t.jsonl:4: gc moves entries must be [old, new] slots in [0, slots_before = 5), got [2,5]");
  x = j;
  x.erase("moves");
  CHECK(err(x) == "t.jsonl:4: gc field moves must be an array");
  x = j;
  x.erase("slots_after");
  CHECK(err(x) == "t.jsonl:4: gc: field slots_after must be an integer");
  CHECK(err(j) == "no error");
}

TEST_CASE("keyframe record: a bad node or slot_to_node entry is an error naming it", "[trace][records]") {
  const testing::SampleTrace& t = testing::sample_trace("figure1_once_upon_a_time.json");
  const auto it = std::find_if(t.records.begin(), t.records.end(), [](const json& r) { return r.value("kind", "") == "keyframe"; });
  REQUIRE(it != t.records.end());
  const json& k = *it;
  REQUIRE(k["nodes"].size() >= 3);
  auto err = [](json x) { return error_of([&] { KeyframeRecord::from_json(x, "t.jsonl:9"); }); };
  json x = k;
  x["nodes"][2]["id"] = 1;
  CHECK(err(x) == "t.jsonl:9: nodes[2]: field id = 1 defines node 1 a second time: a node is defined once and never redefined, the next new id is 2");
  x = k;
  x["nodes"][1]["token"] = "a";
  CHECK(err(x) == "t.jsonl:9: nodes[1]: field token must be an integer");
  x = k;
  x["slot_to_node"][0] = -2;
  CHECK(err(x) == "t.jsonl:9: keyframe field slot_to_node[0] must be a node id or -1, got -2");
  x = k;
  x.erase("nodes");
  CHECK(err(x) == "t.jsonl:9: keyframe field nodes must be an array");
  CHECK(err(k) == "no error");
}

TEST_CASE("header and summary records: every sample trace's read and write back unchanged", "[trace][records]") {
  std::set<std::string> verify_kinds;
  size_t headers = 0, summaries = 0, with_vocab = 0;
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    CAPTURE(t.name);
    const json& h = t.records.front();
    const HeaderRecord hr = HeaderRecord::from_json(h, t.name + ":1");
    CHECK(hr.to_json() == h);
    CHECK(hr.to_json().dump() == h.dump());  // byte for byte, as the trace holds it
    CHECK(HeaderRecord::from_json(hr.to_json(), "again") == hr);
    CHECK(hr.version == kTraceVersion);
    CHECK(hr.prompt_length() == static_cast<int32_t>(h["config"].value("prompt", json::array()).size()));
    if (!hr.verify_kind.empty()) verify_kinds.insert(hr.verify_kind);
    with_vocab += !hr.vocab.empty();
    ++headers;
    for (const json& r : t.records) {
      if (r.value("kind", "") != "summary") continue;
      const SummaryRecord s = SummaryRecord::from_json(r, t.name);
      CHECK(s.to_json() == r);
      CHECK(s.to_json().dump() == r.dump());
      CHECK(SummaryRecord::from_json(s.to_json(), "again") == s);
      ++summaries;
    }
  }
  CHECK(summaries == headers);
  CHECK(with_vocab > 0);
  // The verify kinds the samples write are read (none dropped as unknown).
  CHECK(verify_kinds == std::set<std::string>{kVerifySpeculativeChain, kVerifyDsbdLayers, kVerifyLookahead});
}

TEST_CASE("header record: a missing or mistyped field is an error naming it", "[trace][records]") {
  const json h = testing::sample_traces().front().records.front();
  auto err = [](const json& x) { return error_of([&] { HeaderRecord::from_json(x, "t.jsonl:1"); }); };
  auto with = [&](const char* key, json value) {
    json j = h;
    j[key] = std::move(value);
    return j;
  };
  auto without = [&](const char* key) {
    json j = h;
    j.erase(key);
    return j;
  };
  CHECK(err(with("schema", "other")) == "t.jsonl:1: field schema must be \"triescope.trace\", got \"other\"");
  CHECK(err(without("schema")) == "t.jsonl:1: field schema must be \"triescope.trace\", got nothing");
  CHECK(err(with("version", "2")) == "t.jsonl:1: field version must be an integer");
  CHECK(err(with("version", 3)) == "t.jsonl:1: field version is 3, this build reads versions 1 to 2");
  CHECK(err(without("algorithm")) == "t.jsonl:1: field algorithm must be a string");
  CHECK(err(with("backend", 1)) == "t.jsonl:1: field backend must be a string");
  CHECK(err(with("verify_kind", json::array())) == "t.jsonl:1: field verify_kind must be a string");
  CHECK(err(with("config", "x")) == "t.jsonl:1: field config must be an object");
  CHECK(err(with("model", 2)) == "t.jsonl:1: field model must be an object");
  CHECK(err(with("vocab", "ab")) == "t.jsonl:1: field vocab must be an array of strings");
  CHECK(err(with("vocab", json::array({"a", 7}))) == "t.jsonl:1: field vocab[1] must be a string, got 7");
  CHECK(err(json::array()) == "t.jsonl:1: the header must be an object, got []");
  CHECK(err(h) == "no error");
  // Version 1 still reads; optional fields left out read as empty.
  const HeaderRecord v1 = HeaderRecord::from_json(without("verify_kind"), "w");
  CHECK(v1.verify_kind.empty());
  json bare = {{"kind", "header"}, {"schema", kTraceFormat}, {"version", 1}, {"algorithm", "greedy"}};
  const HeaderRecord b = HeaderRecord::from_json(bare, "w");
  CHECK(b.version == 1);
  CHECK(b.backend.empty());
  CHECK(b.config.is_null());
  bare["backend"] = "";  // written whatever it holds: nothing else is invented
  CHECK(b.to_json() == bare);
  CHECK(error_of([&] { b.config_reader("t.jsonl"); }) == "t.jsonl: header: missing field config");
  CHECK(b.vocab.empty());
  CHECK(b.prompt_length() == 0);
}

TEST_CASE("header record: what the writer leaves out, and which fields are provenance", "[trace][records]") {
  HeaderRecord h;
  h.algorithm = "greedy";
  h.backend = "cpu-reference";
  h.config = {{"prompt", {1, 2, 3}}};
  h.model = {{"type", "scripted"}};
  json j = h.to_json();
  CHECK(!j.contains("verify_kind"));
  CHECK(!j.contains("vocab"));
  CHECK(h.prompt_length() == 3);
  h.verify_kind = kVerifyDsbdLayers;
  h.vocab = {"a", "b"};
  j = h.to_json();
  CHECK(j["verify_kind"] == kVerifyDsbdLayers);
  CHECK(j["vocab"] == json::array({"a", "b"}));
  CHECK(HeaderRecord::from_json(j, "w") == h);
  for (const char* field : {"backend", "model", "vocab"}) CHECK(HeaderRecord::is_provenance(field));
  for (const char* field : {"schema", "version", "algorithm", "config", "verify_kind"}) CHECK_FALSE(HeaderRecord::is_provenance(field));
}

TEST_CASE("summary record: a mistyped field is an error naming it; one left out reads as its default", "[trace][records]") {
  const json& r = testing::sample_traces().front().records.back();
  REQUIRE(r.value("kind", "") == "summary");
  auto err = [](const json& x) { return error_of([&] { SummaryRecord::from_json(x, "t.jsonl:40"); }); };
  json x = r;
  x["metrics"] = json::array({1});
  CHECK(err(x) == "t.jsonl:40: summary: field metrics must be an object, got [1]");
  x = r;
  x["outputs"] = 3;
  CHECK(err(x) == "t.jsonl:40: summary: field outputs must be an array, got 3");
  x = r;
  x["seconds"] = "1s";
  CHECK(err(x) == "t.jsonl:40: summary: field seconds must be a number, got \"1s\"");
  CHECK(err(json(7)) == "t.jsonl:40: summary must be an object, got 7");
  CHECK(err(r) == "no error");
  const SummaryRecord early = SummaryRecord::from_json({{"kind", "summary"}, {"outputs", json::array()}}, "w");
  CHECK(early == SummaryRecord{});
  CHECK(SummaryRecord::from_json(r, "w").metrics.contains("last_step"));
}
