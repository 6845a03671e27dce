#include "tests/registry/trace_properties.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

namespace triescope::testing {

using nlohmann::json;

namespace {

// The recorder's figures recomputed here, by hand, from the records.
struct Totals {
  int64_t last_step = -1, model_calls = 0, computed_tokens = 0, gc_runs = 0, peak = -1, final_slots = -1;
};

Totals add_up(const std::vector<json>& records) {
  Totals t;
  for (const json& r : records) {
    if (r["kind"] == "gc") ++t.gc_runs;
    if (r["kind"] != "step") continue;
    t.last_step = std::max<int64_t>(t.last_step, r["step"].get<int64_t>());
    if (r.contains("forward")) {
      ++t.model_calls;
      t.computed_tokens += static_cast<int64_t>(r["forward"]["positions"].size());
    }
    if (r.contains("kv")) {
      t.peak = std::max<int64_t>(t.peak, r["kv"].value("peak", r["kv"]["slots"].get<int64_t>()));
      t.final_slots = r["kv"]["slots"].get<int64_t>();
    }
  }
  return t;
}

}  // namespace

void check_trace_properties(const std::vector<json>& records, const AlgorithmSpec& spec, int32_t keyframe_interval,
                            const json& decoder_metrics) {
  REQUIRE(records.size() >= 3);
  const json& header = records.front();
  CHECK(header["kind"] == "header");
  CHECK(header["version"] == kTraceVersion);
  CHECK(header["algorithm"] == spec.name);
  CHECK(header.value("verify_kind", std::string()) == spec.verify_kind);
  CHECK(records.back()["kind"] == "summary");

  // Order: per step, gc (if one ran), step, keyframe (if due); steps increase.
  int64_t last_step = -1;
  int64_t pending_gc = -1;  // a gc record waiting for its step record
  std::vector<int64_t> keyframe_steps;
  for (size_t i = 1; i + 1 < records.size(); ++i) {
    const json& r = records[i];
    const std::string kind = r["kind"];
    CAPTURE(i, kind, r.value("step", -1));
    REQUIRE((kind == "gc" || kind == "step" || kind == "keyframe"));
    const int64_t step = r["step"].get<int64_t>();
    if (kind == "gc") {
      CHECK(pending_gc < 0);
      CHECK(step > last_step);
      pending_gc = step;
    } else if (kind == "step") {
      CHECK(step > last_step);
      CHECK((pending_gc < 0 || pending_gc == step));
      CHECK((step > 0 || r["phase"] == "prefill"));
      if (r.contains("verify")) CHECK(r["verify"].value("kind", std::string()) == spec.verify_kind);
      pending_gc = -1;
      last_step = step;
    } else {
      CHECK(step == last_step);  // right after its step's record
      CHECK(records[i - 1]["kind"] == "step");
      keyframe_steps.push_back(step);
    }
  }
  CHECK(pending_gc < 0);  // no gc without its step

  // Keyframes: every keyframe_interval steps and after the last step.
  if (spec.has_tree) {
    std::vector<int64_t> want;
    if (keyframe_interval > 0)
      for (int64_t s = keyframe_interval; s <= last_step; s += keyframe_interval) want.push_back(s);
    if (want.empty() || want.back() != last_step) want.push_back(last_step);
    CHECK(keyframe_steps == want);
  } else {
    CHECK(keyframe_steps.empty());
  }

  // Every keyframe's tree is consistent: a node that is live holds a slot,
  // a finished or pruned one holds none once collected, and slot_to_node
  // names exactly the nodes holding each slot.
  for (const json& r : records) {
    if (r["kind"] != "keyframe") continue;
    CAPTURE(r["step"].get<int64_t>());
    const json& nodes = r["nodes"];
    const json& s2n = r["slot_to_node"];
    std::map<int64_t, int64_t> holder;
    for (const json& n : nodes) {
      const int64_t slot = n["slot"].get<int64_t>();
      if (n["status"] == "live") {
        CAPTURE(n.dump());
        CHECK(slot >= 0);
      }
      if (n["status"] == "finished") CHECK(slot == -1);  // EOS is never written
      if (slot >= 0) {
        CHECK(!holder.count(slot));
        holder[slot] = n["id"].get<int64_t>();
      }
    }
    for (size_t s = 0; s < s2n.size(); ++s) {
      const int64_t want = holder.count(static_cast<int64_t>(s)) ? holder[static_cast<int64_t>(s)] : -1;
      CHECK(s2n[s].get<int64_t>() == want);
    }
    for (const auto& [slot, id] : holder) CHECK(slot < static_cast<int64_t>(s2n.size()));
  }

  // The summary's figures are what the step records add up to, and the
  // decoder's own counters agree with them.
  const Totals t = add_up(records);
  const json& m = records.back()["metrics"];
  CHECK(m["last_step"] == t.last_step);
  CHECK(m["model_calls"] == t.model_calls);
  CHECK(m["computed_tokens"] == t.computed_tokens);
  CHECK(m["gc_runs"] == t.gc_runs);
  if (t.peak >= 0) {
    CHECK(m["peak_slots"] == t.peak);
    CHECK(m["final_slots"] == t.final_slots);
  }
  for (const char* k : {"model_calls", "computed_tokens", "gc_runs", "peak_slots", "final_slots"})
    if (decoder_metrics.contains(k)) {
      CAPTURE(k);
      CHECK(decoder_metrics[k] == m[k]);
    }

  // Verification counts: one decision per verified draft, as recorded.
  if (spec.verify_kind == kVerifySpeculativeChain) {
    int64_t decisions = 0;
    for (const json& r : records)
      if (r["kind"] == "step" && r.contains("verify")) decisions += static_cast<int64_t>(r["verify"]["decisions"].size());
    CHECK(m["sampling"]["layers_verified"] == decisions);
  }
  if (spec.verify_kind == kVerifyDsbdLayers) {
    int64_t layers = 0;
    for (const json& r : records)
      if (r["kind"] == "step" && r.contains("verify")) layers += static_cast<int64_t>(r["verify"]["layers"].size());
    CHECK(m["sampling"]["layers_verified"] == layers);
  }
}

}  // namespace triescope::testing
