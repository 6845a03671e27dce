// TraceReplay::advance (step k -> a later step by the records in between)
// against TraceReplay::at (from the keyframe) on real traces (sample_traces.h:
// every algorithm, GC and keyframes made frequent), every step reached
// forwards, by jumps and backwards.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "sample_traces.h"

using namespace triescope;

namespace {

bool same_node(const TreeNode& a, const TreeNode& b) {
  return a.id == b.id && a.parent == b.parent && a.token == b.token && a.depth == b.depth && a.slot == b.slot && a.logprob == b.logprob &&
         a.status == b.status;
}

// First field in which two views differ, "" when they are identical.
std::string view_difference(const StepView& a, const StepView& b) {
  if (a.step != b.step) return "step";
  if (a.phase != b.phase) return "phase";
  if (a.nodes.size() != b.nodes.size()) return "nodes.size";
  for (size_t i = 0; i < a.nodes.size(); ++i)
    if (!same_node(a.nodes[i], b.nodes[i])) return "nodes[" + std::to_string(i) + "]";
  if (a.slot_to_node != b.slot_to_node) return "slot_to_node";
  if (a.added != b.added) return "added";
  if (a.gc_moves != b.gc_moves) return "gc_moves";
  if (a.gc_slots_before != b.gc_slots_before) return "gc_slots_before";
  if (a.forward.has_value() != b.forward.has_value()) return "forward";
  if (a.forward) {
    if (a.forward->queries != b.forward->queries) return "forward.queries";
    if (a.forward->positions != b.forward->positions) return "forward.positions";
    if (a.forward->slots != b.forward->slots) return "forward.slots";
    if (!(a.forward->mask == b.forward->mask)) return "forward.mask";
  }
  if (a.kv != b.kv) return "kv";
  if (a.chosen != b.chosen) return "chosen";
  if (a.extra != b.extra) return "extra";
  return "";
}

size_t count_kind(const std::vector<json>& recs, const char* kind) {
  return static_cast<size_t>(std::count_if(recs.begin(), recs.end(), [&](const json& r) { return r.value("kind", "") == kind; }));
}

}  // namespace

TEST_CASE("view_difference notices a difference in any field", "[trace][replay]") {
  // The comparison the tests below rely on must be able to fail.
  const testing::SampleTrace& d = testing::sample_traces().front();
  TraceReplay rp(d.records, d.name);
  REQUIRE(rp.steps().size() >= 3);
  const StepView a = rp.at(rp.steps()[1]);
  CHECK(view_difference(a, a).empty());
  CHECK(!view_difference(a, rp.at(rp.steps()[2])).empty());
  StepView b = a;
  b.nodes.back().status = b.nodes.back().status == NodeStatus::live ? NodeStatus::pruned : NodeStatus::live;
  CHECK(view_difference(a, b) == "nodes[" + std::to_string(a.nodes.size() - 1) + "]");
  b = a;
  b.kv = KvRecord{.slots = -5};
  CHECK(view_difference(a, b) == "kv");
  if (a.forward && a.forward->mask.rows > 0) {
    b = a;
    b.forward->mask.flip(0, 0);
    CHECK(view_difference(a, b) == "forward.mask");
  }
}

TEST_CASE("advance gives exactly at()'s view on every bundled sample: forwards, jumps, backwards", "[trace][replay][samples]") {
  const auto& all = testing::sample_traces();
  REQUIRE(all.size() >= 8);
  size_t with_gc = 0, with_keyframes = 0, advanced = 0;
  for (const testing::SampleTrace& d : all) {
    CAPTURE(d.name);
    TraceReplay rp(d.records, d.name);
    const auto& steps = rp.steps();
    REQUIRE(!steps.empty());
    with_gc += count_kind(d.records, "gc") > 0;
    with_keyframes += count_kind(d.records, "keyframe") > 0;
    std::vector<StepView> ref;
    for (int32_t s : steps) ref.push_back(rp.at(s));
    // Forwards, one step at a time, each from the previous advance().
    StepView cur = ref.front();
    for (size_t i = 1; i < steps.size(); ++i) {
      CAPTURE(steps[i]);
      cur = rp.advance(cur, steps[i]);
      REQUIRE(view_difference(cur, ref[i]) == "");
      ++advanced;
    }
    // advance_into, refilling the buffers of the view two steps back (what
    // the GUI does): stale fields of that view must not survive.
    StepView x = ref.front(), y = ref.back();
    for (size_t i = 1; i < steps.size(); ++i) {
      CAPTURE(steps[i]);
      rp.advance_into(x, steps[i], y);
      REQUIRE(view_difference(y, ref[i]) == "");
      std::swap(x, y);
    }
    // Jumps forward (every pair on short traces, a random sample on long
    // ones), backwards and in place (at()'s fallback).
    std::mt19937 rng(7);
    const size_t n = steps.size();
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        if (n > 24 && rng() % (n / 8) != 0) continue;
        CAPTURE(steps[i], steps[j]);
        REQUIRE(view_difference(rp.advance(ref[i], steps[j]), ref[j]) == "");
      }
  }
  // The samples really exercised GC moves and keyframes between steps.
  CHECK(with_gc >= 3);
  CHECK(with_keyframes >= 6);
  CHECK(advanced > 100);
}

TEST_CASE("advance reports a malformed record like at() does", "[trace][replay]") {
  std::vector<json> recs = testing::sample_traces().front().records;
  // Break the status entry of a step in the middle.
  TraceReplay good(recs, "t.jsonl");
  const auto steps = good.steps();
  REQUIRE(steps.size() >= 3);
  const int32_t bad_step = steps[2];
  bool broke = false;
  for (json& r : recs)
    if (r.value("kind", "") == "step" && r.value("step", -1) == bad_step) {
      r["status"] = json::array({{{"node", 100000}, {"status", "live"}}});
      broke = true;
    }
  REQUIRE(broke);
  TraceReplay rp(recs, "t.jsonl");
  const StepView prev = rp.at(steps[1]);
  std::string at_msg, adv_msg;
  try {
    (void)rp.at(bad_step);
  } catch (const Error& e) {
    at_msg = e.what();
  }
  try {
    (void)rp.advance(prev, bad_step);
  } catch (const Error& e) {
    adv_msg = e.what();
  }
  CHECK(at_msg.find("t.jsonl") != std::string::npos);
  CHECK(at_msg.find("unknown node 100000") != std::string::npos);
  CHECK(adv_msg == at_msg);
}

TEST_CASE("records out of step order are a named error, not a step read without its records", "[trace][replay]") {
  // 9ae4cdc read such a trace, and `inspect --step` showed a step with none of
  // its records (exit 0): at() stops at the first record of a later step. A
  // step record that comes later is out of order, not missing: the error
  // names the first record below a step already read, with the keyframes
  // kept or dropped (each must follow its own step's record).
  std::vector<json> recs = testing::sample_traces().front().records;
  SECTION("keyframes kept") {}
  SECTION("keyframes dropped") {
    recs.erase(std::remove_if(recs.begin(), recs.end(), [](const json& r) { return r.value("kind", "") == "keyframe"; }), recs.end());
  }
  std::vector<size_t> step_idx;
  for (size_t i = 0; i < recs.size(); ++i)
    if (recs[i].value("kind", "") == "step") step_idx.push_back(i);
  REQUIRE(step_idx.size() >= 4);
  const size_t a = step_idx[step_idx.size() - 2], b = step_idx[step_idx.size() - 1];
  const int32_t sa = recs[a]["step"], sb = recs[b]["step"];
  std::swap(recs[a], recs[b]);
  std::string err = "none";
  try {
    TraceReplay rp(recs, "swapped");
  } catch (const Error& e) {
    err = e.what();
  }
  // The first record after the moved step record whose step is below sb.
  size_t bad = a + 1;
  while (!(recs[bad].contains("step") && recs[bad]["step"].get<int32_t>() < sb)) ++bad;
  CHECK(err == "swapped:" + std::to_string(bad + 1) + ": a record of step " + recs[bad]["step"].dump() + " after records of step " +
                   std::to_string(sb) + ": records must be in ascending step order (docs/trace-format.md)");
  CHECK(bad <= b);
  CHECK(sa < sb);
}

TEST_CASE("a step record that never comes is missing, named at the record that skips it", "[trace][replay]") {
  std::vector<json> recs = testing::sample_traces().front().records;
  recs.erase(std::remove_if(recs.begin(), recs.end(), [](const json& r) { return r.value("kind", "") == "keyframe"; }), recs.end());
  std::vector<size_t> step_idx;
  for (size_t i = 0; i < recs.size(); ++i)
    if (recs[i].value("kind", "") == "step") step_idx.push_back(i);
  REQUIRE(step_idx.size() >= 4);
  const size_t late = step_idx[step_idx.size() - 2];
  const int32_t s = recs[late]["step"].get<int32_t>();
  recs.erase(recs.begin() + static_cast<std::ptrdiff_t>(late));
  try {
    TraceReplay rp(recs, "dropped");
    FAIL("a dropped step record was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("dropped:" + std::to_string(step_idx.back()) + ": step record of step " + std::to_string(s + 1) +
                                         " where step " + std::to_string(s) + " comes next: the step record of step " +
                                         std::to_string(s) + " is missing"));
  }
}

TEST_CASE("the replay's mask decode equals trace_mask_parse, and words its errors the same", "[trace][replay]") {
  std::vector<json> recs = testing::sample_traces().front().records;
  TraceReplay good(recs, "m.jsonl");
  const int32_t step = good.steps()[1];
  size_t idx = 0;
  for (size_t i = 0; i < recs.size(); ++i)
    if (recs[i].value("kind", "") == "step" && recs[i].value("step", -1) == step) idx = i;
  REQUIRE(idx > 0);
  REQUIRE(recs[idx].contains("forward"));
  const int32_t rows = static_cast<int32_t>(recs[idx]["forward"]["queries"].size());
  std::mt19937 rng(11);
  for (int32_t cols : {1, 7, 8, 63, 64, 65, 70, 128, 200}) {
    CAPTURE(cols);
    BitMask m(rows, cols);
    for (int32_t r = 0; r < rows; ++r)
      for (int32_t c = 0; c < cols; ++c)
        if (rng() % 3 == 0) m.set(r, c);
    json mj = trace_mask(m);
    // Upper-case hex is accepted by the core reader too.
    if (cols == 70 && rows > 0) {
      std::string h = mj["rows"][0].get<std::string>();
      for (char& ch : h) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      mj["rows"][0] = h;
    }
    recs[idx]["forward"]["mask"] = mj;
    TraceReplay rp(recs, "m.jsonl");
    const StepView v = rp.at(step);
    REQUIRE(v.forward);
    CHECK(v.forward->mask == trace_mask_parse(mj, "x"));
    CHECK(v.forward->mask == m);
  }
  // Malformed rows: the same message as trace_mask_parse gives.
  BitMask m(rows, 70);
  const json base = trace_mask(m);
  for (const std::string& bad : {std::string("zz"), std::string("short"), std::string("bits past cols")}) {
    CAPTURE(bad);
    json mj = base;
    std::string h = mj["rows"][0].get<std::string>();
    if (bad == "zz") h[2] = 'z';
    if (bad == "short") h.pop_back();
    if (bad == "bits past cols") h[h.size() - 2] = 'f';  // bit 71 > cols
    mj["rows"][0] = h;
    recs[idx]["forward"]["mask"] = mj;
    TraceReplay rp(recs, "m.jsonl");
    std::string expect, got;
    try {
      (void)trace_mask_parse(mj, "m.jsonl:" + std::to_string(idx + 1) + ": forward.mask");
    } catch (const Error& e) {
      expect = e.what();
    }
    try {
      (void)rp.at(step);
    } catch (const Error& e) {
      got = e.what();
    }
    CHECK(!expect.empty());
    CHECK(got == expect);
  }
}
