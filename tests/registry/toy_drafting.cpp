// The toy drafting algorithm "toy_guess" (toy_drafting.h): each step feeds
// the tip's greedy token and, as its child, the tip's runner-up token as a
// guess of the token after it, in one forward pass; the guess is accepted
// when the target's greedy token after the first is the guess (two tokens
// that step), rejected otherwise (one token; its slot is collected before
// the next step). Verification runs where the sample's backend put the
// "toy_guess" verifier, else on the CPU. Written as the built-in decoders
// are (core/decode/speculative.cpp): each step's events in a StepRecord, the
// verification result through StepRecord::verify (its kind is the header's).
#include <chrono>

#include "core/common/error.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/decode/run_sample.h"
#include "core/decode/tree_step.h"
#include "core/kv/kv_cache.h"
#include "core/trace/step_record.h"
#include "core/trace/trace_recorder.h"
#include "tests/registry/toy_drafting.h"

namespace triescope::toy {
namespace {

// Declared as a built-in decoder's header declares its spec; defined by
// TRIESCOPE_DEFINE_ALGORITHM at the end of the file.
const AlgorithmSpec& toy_guess_spec();

struct ToyGuessConfig final : AlgorithmConfig {
  int32_t iterations = 4;
};

void parse(JsonObjectReader& r, const Sample&, ToyGuessConfig& c) {
  auto t = r.object("toy_guess");
  c.iterations = static_cast<int32_t>(t.get_int("iterations", 1, 4096));
  t.finish();
}

// The highest logit of a row other than `not_this`, ties to the lower id.
int32_t runner_up(const float* row, int32_t vocab, int32_t not_this) {
  int32_t best = not_this == 0 ? 1 : 0;
  for (int32_t t = 0; t < vocab; ++t)
    if (t != not_this && row[t] > row[best]) best = t;
  return best;
}

// The toy's tree, its cache, the last pass's logits and what it has cost.
struct ToyRun {
  TokenTree tree;
  KvSlots slots;
  Logits logits;
  int64_t calls = 0, fed = 0, gcs = 0;
  // Gives `nodes` fresh slots, feeds them in one pass and records the
  // step's added nodes, forward pass and KV figures.
  void feed(Model& model, const std::vector<int32_t>& nodes, StepRecord& ev) {
    for (int32_t id : nodes) tree.node(id).slot = slots.allocate();
    const StepInput in = tree_step_input(tree, nodes, slots.num_slots());
    model.forward(in, logits);
    ++calls;
    fed += static_cast<int64_t>(nodes.size());
    ev.added(tree, nodes);
    ev.forward([&] { return tree_step_json(nodes, in); });
    ev.kv([&] { return KvRecord{.slots = slots.num_slots(), .peak = slots.peak()}; });
  }
  // A rejected guess gives its slot back before the next step.
  void collect(Model& model, TraceRecorder& rec, int32_t step, int32_t tip) {
    const CompactionPlan plan = kv_collect_garbage(tree, {tip}, slots.num_slots());
    model.compact(plan);
    slots.apply(plan);
    rec.gc(step, plan);
    ++gcs;
  }
  // Writes the summary; the one output is `tokens`.
  SampleRun finish(TraceRecorder& rec, const std::vector<int32_t>& tokens, double seconds) const {
    SampleRun run;
    run.outputs.resize(1);
    run.outputs[0].tokens = tokens;
    run.metrics = {{"model_calls", calls}, {"computed_tokens", fed}, {"gc_runs", gcs}, {"peak_slots", slots.peak()}, {"final_slots", slots.num_slots()}};
    record_summary(rec, [&] { return sequences_json({tokens}); }, [&] { return run.metrics; }, seconds, &tree, slots.num_slots());
    return run;
  }
};

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const auto t0 = std::chrono::steady_clock::now();
  const ToyGuessConfig& c = s.config_as<ToyGuessConfig>();
  Model& model = *s.model;
  const int32_t V = model.vocab_size();
  TS_CHECK(V >= 2, s.path << ": toy_guess needs a vocabulary of at least 2 tokens, got " << V);
  prompt_check(s.prompt, V, "toy_guess");
  model.reset();
  ToyRun r;
  TraceRecorder rec(trace, s.options.keyframe_interval);
  record_header(rec, toy_guess_spec(), s.options, model, [&] { return json{{"toy_guess", {{"iterations", c.iterations}}}, {"prompt", s.prompt}}; });
  const std::vector<int32_t> prompt_nodes = r.tree.add_chain(kNoNode, s.prompt);
  StepRecord prefill(rec);
  r.feed(model, prompt_nodes, prefill);
  rec.step(0, "prefill", prefill, r.tree, r.slots.num_slots());
  const auto verifier = s.options.verifiers.find<ToyGuessVerifier>(toy_guess_spec().verify_kind);
  int32_t tip = prompt_nodes.back(), row = r.logits.rows - 1;
  std::vector<int32_t> out;
  for (int32_t step = 1; step <= c.iterations; ++step) {
    if (step > 1) r.collect(model, rec, step, tip);
    const int32_t next = argmax_row(r.logits.row(row), V), guess = runner_up(r.logits.row(row), V, next);
    const int32_t a = r.tree.add_child(tip, next, 0.0), b = r.tree.add_child(a, guess, 0.0);
    StepRecord ev(rec);
    r.feed(model, {a, b}, ev);
    const bool accepted = verifier ? verifier->verify(r.logits, 0, guess) : argmax_row(r.logits.row(0), V) == guess;
    out.push_back(next);
    if (accepted) {
      out.push_back(guess);
    } else {
      r.tree.node(b).status = NodeStatus::rejected;
      ev.status(b, NodeStatus::rejected);
    }
    ev.verify([&] { return json{{"guess_node", b}, {"accepted", accepted}, {"steps", accepted ? 2 : 1}}; });
    rec.step(step, "verify", ev, r.tree, r.slots.num_slots());
    tip = accepted ? b : a;
    row = accepted ? 1 : 0;
  }
  os << "toy_guess: " << tokens_to_text(model, out) << "\n";
  return r.finish(rec, out, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TRIESCOPE_DEFINE_ALGORITHM(toy_guess_spec, AlgorithmSpec{
    .name = "toy_guess",
    .description = "a test's toy drafting algorithm: the greedy token and a guess of the next, verified",
    .sections = {"toy_guess"},
    .scored = false,
    .verify_kind = kToyGuessKind,
    .parse = config_parser(parse),
    .run = run,
});

}  // namespace
}  // namespace triescope::toy
