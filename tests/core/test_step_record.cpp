// The event vocabulary decoders speak (core/trace/step_record.h) and the
// header written from each algorithm's registered spec (decoder_trace.h).
#include <catch2/catch.hpp>

#include "core/common/error.h"
#include "core/analysis/verify_kind.h"
#include "core/decode/algorithm.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/dsbd.h"
#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"
#include "core/decode/multigen.h"
#include "core/decode/sampling.h"
#include "core/decode/speculative.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace_recorder.h"

using namespace triescope;

namespace {

TokenTree two_node_tree() {
  TokenTree t;
  const std::vector<int32_t> ids = t.add_chain(kNoNode, {7, 8});
  t.node(ids[0]).slot = 0;
  t.node(ids[1]).slot = 1;
  return t;
}

SyntheticConfig small_model(uint64_t seed) {
  SyntheticConfig mc;
  mc.vocab_size = 40;
  mc.seed = seed;
  return mc;
}

}  // namespace

TEST_CASE("step record: with nothing recorded every event is a no-op and no value is built", "[trace]") {
  TraceRecorder rec(nullptr, 4);
  StepRecord ev(rec, {"added", "status"});
  const TokenTree tree = two_node_tree();
  int built = 0;
  ev.added(tree, {0, 1});
  ev.status(1, NodeStatus::pruned);
  ev.push("chosen", [&] { ++built; return json{{"node", 1}}; });
  ev.set("kv", [&] { ++built; return json{{"slots", 2}}; });
  ev.verify([&] { ++built; return json::object(); });
  CHECK_FALSE(ev.on());
  CHECK(built == 0);
  CHECK(ev.take().is_null());
  rec.step(0, "prefill", ev, tree, 2);  // writes nothing, throws nothing
  CHECK(rec.totals().last_step == -1);
}

TEST_CASE("step record: events become the step record's fields", "[trace]") {
  MemoryTraceSink sink;
  TraceRecorder rec(&sink, 0);
  rec.header("toy", "cpu-reference", json::object(), json::object(), {}, kVerifySpeculativeChain);
  const TokenTree tree = two_node_tree();

  StepRecord prefill(rec, {"added", "status", "chosen"});
  rec.step(0, "prefill", prefill, tree, 2);
  const json& empty = sink.records.back();
  CHECK(empty["added"] == json::array());  // declared lists are written even when nothing happened
  CHECK(empty["status"] == json::array());
  CHECK(empty["chosen"] == json::array());
  CHECK_FALSE(empty.contains("verify"));

  StepRecord ev(rec, {"status"});
  ev.added(tree, {0, 1});
  ev.pruned({1});
  ev.status(0, NodeStatus::accepted);
  ev.push("chosen", [] { return json{{"node", 1}}; });
  ev.set("forward", [] { return json{{"positions", {0, 1}}}; });
  ev.verify([] { return json{{"accepted", 1}}; });
  rec.step(1, "verify", ev, tree, 2);
  const json& r = sink.records.back();
  CHECK(r["kind"] == "step");
  CHECK(r["step"] == 1);
  CHECK(r["phase"] == "verify");
  REQUIRE(r["added"].size() == 2);
  CHECK(r["added"][1] == trace_node(tree.node(1)));
  CHECK(r["status"] == json::array({{{"node", 1}, {"status", "pruned"}}, {{"node", 0}, {"status", "accepted"}}}));
  CHECK(r["chosen"] == json::array({{{"node", 1}}}));
  CHECK(r["verify"] == json{{"accepted", 1}, {"kind", kVerifySpeculativeChain}});  // the kind is the header's
  CHECK(rec.totals().model_calls == 1);  // a "forward" counts as a pass

}

TEST_CASE("step record: a verification result under a header that verifies nothing is refused", "[trace]") {
  MemoryTraceSink sink;
  TraceRecorder rec(&sink, 0);
  rec.header("toy", "cpu-reference", json::object(), json::object(), {});
  StepRecord ev(rec);
  ev.verify([] { return json{{"accepted", 0}}; });
  CHECK_THROWS_AS(rec.step(0, "prefill", ev), Error);
}

TEST_CASE("decoder trace: a decoder called directly heads its trace with its registered spec", "[trace]") {
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
  auto header_of = [](const MemoryTraceSink& s) { return s.records.at(0); };
  auto check = [&](const MemoryTraceSink& sink, const AlgorithmSpec& spec) {
    CAPTURE(spec.name);
    const AlgorithmSpec* registered = algorithm_find(spec.name);
    REQUIRE(registered);
    CHECK(registered->verify_kind == spec.verify_kind);
    const json h = header_of(sink);
    CHECK(h["algorithm"] == spec.name);
    CHECK(trace_verify_kind(h) == spec.verify_kind);
  };
  SyntheticModel model(small_model(5));
  BeamConfig bc;
  bc.num_beams = 3;
  bc.max_new_tokens = 6;
  MemoryTraceSink trie, batch, sampled, greedy, look, multi, spec;  // one trace per decoder
  trie_beam_search(model, prompt, bc, &trie);
  check(trie, trie_beam_search_spec());
  batch_beam_search(model, prompt, bc, &batch);
  check(batch, batch_beam_search_spec());
  beam_sampling(model, prompt, bc, SamplingConfig{}, &sampled);
  check(sampled, beam_sampling_spec());
  greedy_decode(model, prompt, 6, -1, &greedy);
  check(greedy, greedy_spec());
  LookaheadConfig lc;
  lc.max_new_tokens = 8;
  lookahead_decode(model, prompt, lc, &look);
  check(look, lookahead_spec());
  MultiGenConfig mc;
  mc.method = MultiGenMethod::copy;
  multigen_decode(model, prompt, mc, &multi);
  check(multi, multigen_spec());
  SyntheticModel draft(small_model(6));
  speculative_decode(model, draft, prompt, SpeculativeConfig{}, &spec);
  check(spec, speculative_spec());
  MemoryTraceSink drafted;
  dsbd_decode(model, draft, prompt, DsbdConfig{}, &drafted);
  check(drafted, dsbd_spec());
  CHECK(dsbd_spec().verify_kind == kVerifyDsbdLayers);
  CHECK(speculative_spec().verify_kind == kVerifySpeculativeChain);
  CHECK(lookahead_spec().verify_kind == kVerifyLookahead);
}
