// A toy algorithm registered in this one file, to show (and test) that adding
// an algorithm touches nothing else: "toy_two_branch" grows the two most
// likely children of its tip each step, feeds both in one forward pass (each
// attends to its ancestors only), continues from the better one and prunes
// the other, collecting its slot before the next step. Written as the
// built-in decoders are (core/decode/greedy_decode.cpp): each step's events
// in a StepRecord handed to the one TraceRecorder, the header and summary
// through record_header / record_summary, so the CLI, diff, inspect and the
// GUI read its trace as they read any other.
#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/decode/run_sample.h"
#include "core/decode/tree_step.h"
#include "core/kv/kv_cache.h"
#include "core/trace/step_record.h"
#include "core/trace/trace_recorder.h"

namespace triescope {
namespace {

// Declared as a built-in decoder's header declares its spec; defined by
// TRIESCOPE_DEFINE_ALGORITHM at the end of the file.
const AlgorithmSpec& toy_two_branch_spec();

struct ToyConfig final : AlgorithmConfig {
  int32_t max_new_tokens = 8;
};

void parse(JsonObjectReader& r, const Sample&, ToyConfig& c) {
  auto t = r.object("toy");
  c.max_new_tokens = static_cast<int32_t>(t.get_int("max_new_tokens", 1, 4096));
  t.finish();
}

// The two highest logits of a row, ties to the lower id.
std::pair<int32_t, int32_t> top_two(const float* row, int32_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + 2, ids.end(), [&](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  return {ids[0], ids[1]};
}

// The toy's tree, its cache, the last pass's logits and what it has cost.
struct TwoBranch {
  TokenTree tree;
  KvSlots slots;
  Logits logits;
  int64_t calls = 0, fed = 0, gcs = 0;
};

// Gives `nodes` fresh slots, feeds them in one pass and records the step's
// added nodes, forward pass and KV figures.
void feed_step(Model& model, TwoBranch& b, const std::vector<int32_t>& nodes, StepRecord& ev) {
  for (int32_t id : nodes) b.tree.node(id).slot = b.slots.allocate();
  const StepInput in = tree_step_input(b.tree, nodes, b.slots.num_slots());
  model.forward(in, b.logits);
  ++b.calls;
  b.fed += static_cast<int64_t>(nodes.size());
  ev.added(b.tree, nodes);
  ev.forward([&] { return tree_step_json(nodes, in); });
  ev.kv([&] { return KvRecord{.slots = b.slots.num_slots(), .peak = b.slots.peak()}; });
}

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const auto t0 = std::chrono::steady_clock::now();
  const ToyConfig& c = s.config_as<ToyConfig>();
  Model& model = *s.model;
  const int32_t V = model.vocab_size();
  prompt_check(s.prompt, V, "toy_two_branch");
  model.reset();
  TwoBranch b;
  TraceRecorder rec(trace, s.options.keyframe_interval);
  record_header(rec, toy_two_branch_spec(), s.options, model,
                [&] { return json{{"toy", {{"max_new_tokens", c.max_new_tokens}}}, {"prompt", s.prompt}}; });
  const std::vector<int32_t> prompt_nodes = b.tree.add_chain(kNoNode, s.prompt);
  StepRecord prefill(rec);
  feed_step(model, b, prompt_nodes, prefill);
  rec.step(0, "prefill", prefill, b.tree, b.slots.num_slots());
  int32_t tip = prompt_nodes.back(), row = b.logits.rows - 1;
  std::vector<int32_t> out;
  for (int32_t step = 1; step <= c.max_new_tokens; ++step) {
    if (step > 1) {  // the pruned sibling gives its slot back
      const CompactionPlan plan = kv_collect_garbage(b.tree, {tip}, b.slots.num_slots());
      model.compact(plan);
      b.slots.apply(plan);
      rec.gc(step, plan);
      ++b.gcs;
    }
    const auto [best, second] = top_two(b.logits.row(row), V);
    const int32_t kept = b.tree.add_child(tip, best, 0.0), pruned = b.tree.add_child(tip, second, 0.0);
    StepRecord ev(rec);
    feed_step(model, b, {kept, pruned}, ev);
    b.tree.node(pruned).status = NodeStatus::pruned;
    ev.status(pruned, NodeStatus::pruned);
    rec.step(step, "grow", ev, b.tree, b.slots.num_slots());
    tip = kept;
    row = 0;
    out.push_back(best);
  }
  const json metrics = {{"model_calls", b.calls}, {"computed_tokens", b.fed}, {"gc_runs", b.gcs}, {"peak_slots", b.slots.peak()},
                        {"final_slots", b.slots.num_slots()}};
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec, [&] { return sequences_json({out}); }, [&] { return metrics; }, seconds, &b.tree, b.slots.num_slots());
  os << "toy_two_branch: " << tokens_to_text(model, out) << "\n";
  Hypothesis h;
  h.tokens = out;
  return {{h}, metrics, nullptr};
}

TRIESCOPE_DEFINE_ALGORITHM(toy_two_branch_spec, AlgorithmSpec{
    .name = "toy_two_branch",
    .description = "a test's toy: the two best children of the tip each step, one kept",
    .sections = {"toy"},
    .scored = false,
    .parse = config_parser(parse),
    .run = run,
});

}  // namespace
}  // namespace triescope
