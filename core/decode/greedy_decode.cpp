#include "core/decode/greedy_decode.h"

#include <chrono>

#include "core/common/error.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/decode/tree_step.h"
#include "core/kv/kv_cache.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

namespace {

// One chain, its cache and the last pass's logits.
struct Chain {
  TokenTree tree;
  KvSlots slots;
  Logits logits;
  int64_t computed = 0;
};

// Gives `nodes` fresh slots, feeds them in one pass and records the step.
void feed_step(Model& model, Chain& c, const std::vector<int32_t>& nodes, TraceRecorder& rec, int32_t step) {
  for (int32_t id : nodes) c.tree.node(id).slot = c.slots.allocate();
  const StepInput in = tree_step_input(c.tree, nodes, c.slots.num_slots());
  model.forward(in, c.logits);
  c.computed += static_cast<int64_t>(nodes.size());
  StepRecord ev(rec);
  ev.added(c.tree, nodes);
  ev.forward([&] { return tree_step_json(nodes, in); });
  ev.kv([&] { return KvRecord{.slots = c.slots.num_slots(), .peak = c.slots.peak()}; });
  rec.step(step, step == 0 ? "prefill" : "decode", ev, c.tree, c.slots.num_slots());
}

}  // namespace

nlohmann::json GreedyMetrics::to_json() const {
  return {{"prompt_len", prompt_len},           {"generated", generated},  {"steps", steps},
          {"computed_tokens", computed_tokens}, {"computed_decode", computed_decode}, {"verify_tokens", 0},
          {"lookahead_tokens", 0},              {"accepted_from_candidates", 0},  {"peak_slots", peak_slots}};
}

GreedyResult greedy_decode(Model& model, const std::vector<int32_t>& prompt, int32_t max_new_tokens, int32_t eos_token, TraceSink* trace,
                           const DecodeOptions& opt) {
  return greedy_decode(model, prompt, GreedyConfig{max_new_tokens, eos_token}, trace, opt);
}

GreedyResult greedy_decode(Model& model, const std::vector<int32_t>& prompt, const GreedyConfig& cfg, TraceSink* trace,
                           const DecodeOptions& opt) {
  const int32_t max_new_tokens = cfg.max_new_tokens, eos_token = cfg.eos_token;
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = model.vocab_size();
  prompt_check(prompt, V, "greedy decoding");
  TS_CHECK(max_new_tokens >= 1, "greedy decoding: max_new_tokens must be >= 1, got " << max_new_tokens);
  model.reset();
  GreedyResult res;
  Chain f;
  TraceRecorder rec(trace, opt.keyframe_interval);
  record_header(rec, greedy_spec(), opt, model,
                [&] { return json{{"max_new_tokens", max_new_tokens}, {"eos_token", eos_token}, {"prompt", prompt}}; });
  const std::vector<int32_t> nodes = f.tree.add_chain(kNoNode, prompt);
  feed_step(model, f, nodes, rec, 0);
  int32_t last = nodes.back(), row = f.logits.rows - 1;
  res.metrics.prompt_len = static_cast<int32_t>(prompt.size());
  for (int32_t step = 1;; ++step) {
    const auto argmax = opt.verifiers.find_seam<GreedyArgmax>(kGreedyArgmaxSeam);
    const int32_t tok = argmax ? argmax->argmax(f.logits, row) : argmax_row(f.logits.row(row), V);
    res.tokens.push_back(tok);
    if (tok == eos_token || static_cast<int32_t>(res.tokens.size()) >= max_new_tokens) break;
    last = f.tree.add_child(last, tok, 0.0);
    res.metrics.steps = step;
    feed_step(model, f, {last}, rec, step);
    row = 0;
  }
  auto& m = res.metrics;
  m.generated = static_cast<int32_t>(res.tokens.size());
  m.computed_tokens = f.computed;
  m.computed_decode = f.computed - m.prompt_len;
  m.peak_slots = f.slots.peak();
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec, [&] { return sequences_json({res.tokens}); }, [&] { return m.to_json(); }, m.seconds, &f.tree, f.slots.num_slots());
  return res;
}

}  // namespace triescope
