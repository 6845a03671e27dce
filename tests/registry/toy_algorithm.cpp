// A toy algorithm registered in this one file, to show (and test) that adding
// an algorithm touches nothing else: "toy_two_branch" grows the two most
// likely children of its tip each step, feeds both in one forward pass (each
// attends to its ancestors only), continues from the better one and prunes
// the other, collecting its slot before the next step. Its trace goes through
// the one recorder, so the CLI, diff, inspect and the GUI read it as they
// read any other.
#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/decode/run_sample.h"
#include "core/decode/tree_step.h"
#include "core/kv/kv_cache.h"
#include "core/trace/trace_recorder.h"

namespace triescope {
namespace {

struct ToyConfig final : AlgorithmConfig {
  int32_t max_new_tokens = 8;
};

// The two highest logits of a row, ties to the lower id.
std::pair<int32_t, int32_t> top_two(const float* row, int32_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + 2, ids.end(), [&](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  return {ids[0], ids[1]};
}

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const auto t0 = std::chrono::steady_clock::now();
  const ToyConfig& c = s.config_as<ToyConfig>();
  Model& model = *s.model;
  const int32_t V = model.vocab_size();
  model.reset();
  TokenTree tree;
  KvSlots slots;
  Logits logits;
  TraceRecorder rec(trace, s.options.keyframe_interval);
  rec.header(s.algorithm, s.options.backend, {{"toy", {{"max_new_tokens", c.max_new_tokens}}}, {"prompt", s.prompt}}, model.describe(),
             model.vocab_strings());
  int64_t calls = 0, fed = 0, gcs = 0;
  auto feed = [&](const std::vector<int32_t>& nodes) {
    for (int32_t id : nodes) tree.node(id).slot = slots.allocate();
    const StepInput in = tree_step_input(tree, nodes, slots.num_slots());
    model.forward(in, logits);
    ++calls;
    fed += static_cast<int64_t>(nodes.size());
    return tree_step_json(nodes, in);
  };
  auto added = [&](const std::vector<int32_t>& nodes) {
    json a = json::array();
    for (int32_t id : nodes) a.push_back(trace_node(tree.node(id)));
    return a;
  };
  auto kv = [&] { return json{{"slots", slots.num_slots()}, {"peak", slots.peak()}}; };
  const std::vector<int32_t> prompt_nodes = tree.add_chain(kNoNode, s.prompt);
  json fwd = feed(prompt_nodes);
  rec.step(0, "prefill", {{"added", added(prompt_nodes)}, {"forward", fwd}, {"kv", kv()}}, tree, slots.num_slots());
  int32_t tip = prompt_nodes.back(), row = logits.rows - 1;
  std::vector<int32_t> out;
  for (int32_t step = 1; step <= c.max_new_tokens; ++step) {
    if (step > 1) {  // the pruned sibling gives its slot back
      const CompactionPlan plan = kv_collect_garbage(tree, {tip}, slots.num_slots());
      model.compact(plan);
      slots.apply(plan);
      rec.gc(step, plan);
      ++gcs;
    }
    const auto [best, second] = top_two(logits.row(row), V);
    const int32_t a = tree.add_child(tip, best, 0.0), b = tree.add_child(tip, second, 0.0);
    fwd = feed({a, b});
    tree.node(b).status = NodeStatus::pruned;
    tip = a;
    row = 0;
    out.push_back(best);
    rec.step(step, "grow", {{"added", added({a, b})}, {"forward", fwd}, {"status", {{{"node", b}, {"status", "pruned"}}}}, {"kv", kv()}},
             tree, slots.num_slots());
  }
  const json metrics = {{"model_calls", calls}, {"computed_tokens", fed}, {"gc_runs", gcs}, {"peak_slots", slots.peak()},
                        {"final_slots", slots.num_slots()}};
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rec.summary({{{"tokens", out}}}, metrics, seconds, tree, slots.num_slots());
  os << "toy_two_branch: " << tokens_to_text(model, out) << "\n";
  Hypothesis h;
  h.tokens = out;
  return {{h}, metrics, nullptr};
}

AlgorithmSpec spec() {
  AlgorithmSpec a;
  a.name = "toy_two_branch";
  a.description = "a test's toy: the two best children of the tip each step, one kept";
  a.sections = {"toy"};
  a.scored = false;
  a.parse = [](JsonObjectReader& r, const Sample&) {
    auto c = std::make_shared<ToyConfig>();
    auto t = r.object("toy");
    c->max_new_tokens = static_cast<int32_t>(t.get_int("max_new_tokens", 1, 4096));
    t.finish();
    return c;
  };
  a.run = run;
  return a;
}

}  // namespace
TRIESCOPE_REGISTER_ALGORITHM(spec());
}  // namespace triescope
