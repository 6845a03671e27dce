// The step narration (core/analysis/step_narration.h) on real traces: each
// paper-figure sample, decoded here by run_sample, is told with the events its
// figure shows; every bundled sample narrates every step naming only nodes of
// the step's tree; an external trace (no scores, no chosen beams) gets no
// claim it cannot back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/analysis/step_narration.h"
#include "core/analysis/verify_info.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/trace/external_trace.h"
#include "core/trace/trace.h"
#include "tests/core/sample_traces.h"

using namespace triescope;
using nlohmann::json;

namespace {

TraceReplay decode_sample(const char* file) {
  const std::string path = std::string(TRIESCOPE_SOURCE_DIR "/samples/") + file;
  Sample s = sample_parse(json_load_file(path), path);
  MemoryTraceSink sink;
  std::ostringstream report;
  run_sample(s, &sink, report);
  return TraceReplay(std::move(sink.records), path);
}

// Every step's view and narration, each told with the tree the step before left.
struct Told {
  std::vector<StepView> views;
  std::vector<std::vector<NarrationSentence>> steps;
};

Told narrate_all(const TraceReplay& r) {
  Told t;
  std::optional<TreeBefore> before;
  for (int32_t step : r.steps()) {
    t.views.push_back(r.at(step));
    t.steps.push_back(step_narration(t.views.back(), r, before ? &*before : nullptr));
    before = tree_before(t.views.back());
  }
  return t;
}

std::vector<const NarrationSentence*> with_topic(const std::vector<NarrationSentence>& ss, const std::string& topic) {
  std::vector<const NarrationSentence*> out;
  for (const auto& s : ss)
    if (s.topic == topic) out.push_back(&s);
  return out;
}

std::string all_text(const std::vector<NarrationSentence>& ss) {
  std::string t;
  for (const auto& s : ss) t += narration_text(s) + "\n";
  return t;
}

bool names(const NarrationSentence& s, int32_t node) {
  return std::any_of(s.segments.begin(), s.segments.end(), [&](const NarrationSegment& g) { return g.node == node; });
}

// The node of the view whose token reads `text`, -1 (the first one).
int32_t node_of(const StepView& v, const TraceReplay& r, const std::string& text) {
  for (const TreeNode& n : v.nodes)
    if (r.token_text(n.token) == text) return n.id;
  return -1;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("narration: trie beam search Figure 1: 'far' drops out at step 2 and the gc of step 2 frees its slot", "[narration][beam]") {
  const TraceReplay r = decode_sample("figure1_once_upon_a_time.json");
  const Told t = narrate_all(r);
  REQUIRE(t.steps.size() == 4);
  const StepView& v2 = t.views[2];
  const int32_t far = node_of(v2, r, "far");
  REQUIRE(far >= 0);
  CAPTURE(all_text(t.steps[1]), all_text(t.steps[2]));
  // Step 1 adds 'there', 'in', 'far' under 'time'.
  const auto added1 = with_topic(t.steps[1], "added");
  REQUIRE(added1.size() == 1);
  for (const char* w : {"there", "in", "far"}) CHECK(names(*added1[0], node_of(t.views[1], r, w)));
  CHECK(names(*added1[0], node_of(t.views[1], r, "time")));
  // Step 2: 'far' is the one beam that drops out, by its score against the 3rd kept score.
  const auto dropped = with_topic(t.steps[2], "dropped");
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0]->segments.front().node == far);
  const std::string why = narration_text(*dropped[0]);
  double third = 0;
  for (const json& c : v2.chosen) third = std::min(third, c["score"].get<double>());
  CHECK(contains(why, "dropped out"));
  CHECK(contains(why, narration_score(v2.nodes[static_cast<size_t>(far)].logprob)));
  CHECK(contains(why, "3rd and last kept score " + narration_score(third)));
  CHECK(v2.nodes[static_cast<size_t>(far)].logprob < third);
  CHECK(contains(why, "already below"));
  // ... and the gc of step 2 frees the slot 'far' held (slot 6 at step 1).
  const auto gc = with_topic(t.steps[2], "gc");
  REQUIRE(gc.size() == 1);
  CHECK(names(*gc[0], far));
  const int32_t far_slot = t.views[1].nodes[static_cast<size_t>(far)].slot;
  CHECK(far_slot == 6);
  CHECK(contains(narration_text(*gc[0]), "1 slot was freed (slot " + std::to_string(far_slot) + ")"));
  CHECK(contains(narration_text(*gc[0]), "no slot moved"));
  // No other step drops a beam or runs a gc.
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}}) {
    CHECK(with_topic(t.steps[i], "dropped").empty());
    CHECK(with_topic(t.steps[i], "gc").empty());
  }
  // Step 3 is the length limit (max_new_tokens = 3).
  CHECK(contains(all_text(t.steps[3]), "reached the length limit max_new_tokens = 3"));
}

TEST_CASE("narration: without the tree before the step, nothing is said that needs it", "[narration]") {
  const TraceReplay r = decode_sample("figure1_once_upon_a_time.json");
  const StepView v2 = r.at(2);
  const auto told = step_narration(v2, r, nullptr);
  CHECK(with_topic(told, "dropped").empty());  // a status change needs the statuses before
  const auto gc = with_topic(told, "gc");
  REQUIRE(gc.size() == 1);
  CHECK(contains(narration_text(*gc[0]), "slot 6"));
  CHECK_FALSE(contains(narration_text(*gc[0]), "held"));  // whose slot it was needs the layout before
  // A tree from another step is not taken for the one before.
  const TreeBefore wrong = tree_before(r.at(0));
  CHECK(with_topic(step_narration(v2, r, &wrong), "dropped").empty());
}

TEST_CASE("narration: DSBD Figure 3: layer 1 accepts 'is' and 'are', layer 2 stops and 'you' comes from the residual", "[narration][spec]") {
  const TraceReplay r = decode_sample("dsbd_figure3.json");
  const Told t = narrate_all(r);
  REQUIRE(t.steps.size() > 4);
  const StepView& v = t.views[4];
  REQUIRE(v.phase == "verify");
  const auto ver = with_topic(t.steps[4], "verify");
  CAPTURE(all_text(t.steps[4]));
  const NarrationSentence* l1 = nullptr;
  const NarrationSentence* l2 = nullptr;
  for (const auto* s : ver) {
    if (narration_text(*s).rfind("Layer 1:", 0) == 0) l1 = s;
    if (narration_text(*s).rfind("Layer 2:", 0) == 0) l2 = s;
  }
  REQUIRE(l1);
  REQUIRE(l2);
  const std::string t1 = narration_text(*l1), t2 = narration_text(*l2);
  // The chips the verification view reads from the same records, by decision.
  const VerifyInfo info = verify_info(v, r);
  REQUIRE(info.layers.size() >= 2);
  auto label = [&](const VerifyLayer& L, Decision d, size_t k) {
    std::vector<int32_t> ids;
    for (const VerifyChip& c : L.chips)
      if (c.decision == d && std::find(ids.begin(), ids.end(), c.node) == ids.end()) ids.push_back(c.node);
    REQUIRE(k < ids.size());
    return narration_node_label(v, r, ids[k]);
  };
  CHECK(label(info.layers[0], Decision::accepted, 0).rfind("'is' #", 0) == 0);
  CHECK(label(info.layers[0], Decision::accepted, 1).rfind("'are' #", 0) == 0);
  CHECK(label(info.layers[0], Decision::untested, 0).rfind("'do' #", 0) == 0);
  CHECK(contains(t1, "accepted " + label(info.layers[0], Decision::accepted, 0) + " and " + label(info.layers[0], Decision::accepted, 1)));
  CHECK(contains(t1, "(2 of W_L = 2)"));
  CHECK(contains(t1, label(info.layers[0], Decision::untested, 0) + " not tested"));
  CHECK(contains(t1, "the layer passes"));
  CHECK(label(info.layers[1], Decision::accepted, 0).rfind("'they' #", 0) == 0);
  CHECK(label(info.layers[1], Decision::rejected, 0).rfind("'it' #", 0) == 0);
  CHECK(label(info.layers[1], Decision::sampled_residual, 0).rfind("'you' #", 0) == 0);
  CHECK(contains(t2, "accepted " + label(info.layers[1], Decision::accepted, 0)));
  CHECK(contains(t2, "rejected " + label(info.layers[1], Decision::rejected, 0) + " (x2)"));
  CHECK(contains(t2, "verification stops at this layer"));
  CHECK(contains(t2, label(info.layers[1], Decision::sampled_residual, 0) + " sampled from the residual"));
  CHECK(contains(all_text(t.steps[4]), "This iteration produces 2 token(s)."));
  // The draft step before proposes two layers of three beams, verified at step 4.
  CHECK(contains(all_text(t.steps[3]), "proposes 2 layer(s) of draft beams, verified by the target at step 4"));
}

TEST_CASE("narration: MultiGen Figure 1: the prompt once, k = 2 samples side by side at one position, ending at the length limit",
          "[narration][multigen]") {
  const TraceReplay r = decode_sample("multigen_figure1.json");
  const Told t = narrate_all(r);
  REQUIRE(t.steps.size() == 2);
  const StepView& v0 = t.views[0];
  const std::string s0 = all_text(t.steps[0]), s1 = all_text(t.steps[1]);
  CAPTURE(s0, s1);
  const int32_t on = node_of(v0, r, "on"), in = node_of(v0, r, "in");
  CHECK(contains(s0, "the chain 'The' #0 \u2026 'sat' #2, then under 'sat' #2: 'on' #" + std::to_string(on) + ", 'in' #" + std::to_string(in)));
  CHECK(contains(s0, "'on' #" + std::to_string(on) + " (position 3)"));
  CHECK(contains(s0, "'in' #" + std::to_string(in) + " (position 3)"));
  const auto fin = with_topic(t.steps[1], "finished");
  REQUIRE(fin.size() == 1);
  CHECK(contains(narration_text(*fin[0]), "Finished (2)"));
  CHECK(contains(narration_text(*fin[0]), "max_new_tokens = 2"));
  for (const json& c : t.views[1].chosen) CHECK(names(*fin[0], c["node"].get<int32_t>()));
}

TEST_CASE("narration: STATIC Figure 1: what the constraint allowed each beam and what was kept from it", "[narration][constraint]") {
  const TraceReplay r = decode_sample("static_figure1.json");
  const Told t = narrate_all(r);
  REQUIRE(t.steps.size() == 4);
  const StepView& v3 = t.views[3];
  const auto cons = with_topic(t.steps[3], "constraint");
  CAPTURE(all_text(t.steps[3]));
  REQUIRE(cons.size() == 2);
  // Beam 0 after "3 1" is the paper's node 4: CSR row [5, 7) allows tokens 2 and 3, both kept.
  const std::string c0 = narration_text(*cons[0]);
  CHECK(contains(c0, "beam 0 (after token 1 #3): state 4 allows 2 tokens, CSR row [5, 7)"));
  for (const json& c : v3.chosen) CHECK(names(*cons[0], c["node"].get<int32_t>()));
  CHECK(contains(narration_text(*cons[1]), "beam 1 (after token 2 #4): state 3 allows 1 token"));
  CHECK(contains(narration_text(*cons[1]), "none of its allowed continuations was kept"));
  // Beam 1 drops out by score; its parent "1" goes with it.
  const auto dropped = with_topic(t.steps[3], "dropped");
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0]->segments.front().node == 4);
  CHECK(contains(narration_text(*dropped[0]), "With it, token 1 #1 lost its last live child"));
  // Every constraint step says it.
  for (size_t i = 1; i < t.steps.size(); ++i) CHECK_FALSE(with_topic(t.steps[i], "constraint").empty());
}

TEST_CASE("narration: lookahead: the matched candidate and the accepted path, in the kind's words", "[narration][lookahead]") {
  const TraceReplay r = decode_sample("lookahead_repetitive.json");
  int32_t checked = 0;
  for (int32_t step : r.steps()) {
    const StepView v = r.at(step);
    const VerifyInfo info = verify_info(v, r);
    if (info.accepted_nodes.empty()) continue;
    const auto told = step_narration(v, r, nullptr);
    CAPTURE(step, all_text(told));
    const NarrationSentence* path = nullptr;
    for (const auto* s : with_topic(told, "verify"))
      if (contains(narration_text(*s), "accepted path")) path = s;
    REQUIRE(path);
    std::vector<int32_t> named;
    for (const auto& g : path->segments)
      if (g.node >= 0) named.push_back(g.node);
    CHECK(named == info.accepted_nodes);
    CHECK(contains(narration_text(*path), std::to_string(info.accepted_tokens.size()) + " token(s) this pass"));
    CHECK(contains(narration_text(*path), "the greedy token '" + r.token_text(info.accepted_tokens.back()) + "'"));
    if (++checked == 3) break;
  }
  CHECK(checked == 3);
}

TEST_CASE("narration: every bundled sample narrates every step, naming only nodes of the step's tree", "[narration][samples]") {
  int32_t samples = 0, dropped = 0, freed_named = 0;
  for (const testing::SampleTrace& st : testing::sample_traces()) {
    CAPTURE(st.name);
    const TraceReplay r(st.records, st.name);
    const Told t = narrate_all(r);
    ++samples;
    for (size_t i = 0; i < t.steps.size(); ++i) {
      const StepView& v = t.views[i];
      CAPTURE(v.step, all_text(t.steps[i]));
      REQUIRE_FALSE(t.steps[i].empty());
      CHECK(t.steps[i].front().topic == "phase");
      CHECK_FALSE(contains(all_text(t.steps[i]), "could not be read"));
      for (const auto& s : t.steps[i])
        for (const auto& g : s.segments)
          if (g.node >= 0) CHECK(static_cast<size_t>(g.node) < v.nodes.size());
      // A dropped beam is pruned now; a node whose freed slot is named holds no slot now.
      for (const auto* s : with_topic(t.steps[i], "dropped"))
        if (s->segments.front().node >= 0) {
          CHECK(v.nodes[static_cast<size_t>(s->segments.front().node)].status == NodeStatus::pruned);
          ++dropped;
        }
      for (const auto* s : with_topic(t.steps[i], "gc"))
        for (const auto& g : s->segments)
          if (g.node >= 0) {
            CHECK(v.nodes[static_cast<size_t>(g.node)].slot == kNoSlot);
            ++freed_named;
          }
    }
  }
  CHECK(samples >= 12);
  CHECK(dropped > 0);
  CHECK(freed_named > 0);
}

TEST_CASE("narration: an external trace (no scores, no chosen beams) gets no reason it cannot back", "[narration][external]") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "triescope_narration_external.jsonl";
  {
    ExternalTraceWriter w(path.string(), "unit", {"a", "b", "c", "d"}, json::object());
    ExternalStep s0;
    s0.added = {{kNoNode, 0, 0, 0.0}, {0, 1, 1, -0.5}};
    w.step(s0);
    ExternalStep s1;  // two children of "b"
    s1.added = {{1, 2, 2, -0.7}, {1, 3, 3, -2.5}};
    w.step(s1);
    ExternalStep s2;  // "d" pruned by the engine, "c" continues
    s2.status = {{3, "pruned"}};
    s2.added = {{2, 0, 4, -0.9}};
    w.step(s2);
    ExternalStep s3;  // the engine compacts: "d"'s slot 3 goes, slot 4 moves down
    s3.has_gc = true;
    s3.gc_moves = {{0, 0}, {1, 1}, {2, 2}, {4, 3}};
    s3.added = {{4, 1, 4, -1.2}};
    w.step(s3);
    w.close({{1, 2, 0}});
  }
  const TraceReplay r(trace_read(path.string()), path.string());
  const Told t = narrate_all(r);
  REQUIRE(t.steps.size() == 4);
  for (const auto& step : t.steps) {
    const std::string text = all_text(step);
    CAPTURE(text);
    for (const char* claim : {"score", "kept", "below", "constraint", "(-0.", "(-1.", "(-2."}) CHECK_FALSE(contains(text, claim));
  }
  const auto dropped = with_topic(t.steps[2], "dropped");
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0]->segments.front().node == 3);
  CHECK(contains(narration_text(*dropped[0]), "the trace records no reason"));
  const auto gc = with_topic(t.steps[3], "gc");
  REQUIRE(gc.size() == 1);
  CHECK(contains(narration_text(*gc[0]), "(slot 3), which held 'd' #3"));
  CHECK(contains(narration_text(*gc[0]), "1 slot moved down (4 \u2192 3)"));
  std::filesystem::remove(path);
}

// Not run by default: prints the narration of each paper figure's key step
// (the quotes in docs/gui.md): triescope_tests_core "[.narration_print]".
TEST_CASE("narration: print the paper figures' key steps", "[.narration_print]") {
  const std::vector<std::pair<const char*, std::vector<int32_t>>> figures = {
      {"figure1_once_upon_a_time.json", {1, 2}}, {"dsbd_figure3.json", {3, 4}}, {"multigen_figure1.json", {0, 1}},
      {"static_figure1.json", {3}}, {"lookahead_repetitive.json", {}}};
  for (const auto& [file, steps] : figures) {
    const TraceReplay r = decode_sample(file);
    const Told t = narrate_all(r);
    std::vector<int32_t> show = steps;
    for (size_t i = 0; show.empty() && i < t.views.size(); ++i)
      if (!verify_info(t.views[i], r).accepted_nodes.empty()) show.push_back(t.views[i].step);
    for (int32_t s : show) std::cout << "== " << file << " step " << s << "\n" << all_text(t.steps[static_cast<size_t>(s)]);
  }
}
