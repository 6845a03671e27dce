#include "core/decode/multigen.h"

#include <chrono>

#include "core/common/error.h"
#include "core/select/log_normaliser.h"
#include "core/trace/trace_recorder.h"
#include "core/decode/tree_step.h"
#include "core/decode/trie_beam_search.h"

namespace triescope {

const char* multigen_method_name(MultiGenMethod m) {
  switch (m) {
    case MultiGenMethod::copy: return "copy";
    case MultiGenMethod::structured: return "structured";
    case MultiGenMethod::hybrid: return "hybrid";
  }
  return "?";
}

nlohmann::json MultiGenMetrics::to_json() const {
  return {{"prompt_len", prompt_len},
          {"steps", steps},
          {"model_calls", model_calls},
          {"computed_tokens", computed_tokens},
          {"peak_slots", peak_slots},
          {"peak_bytes", peak_bytes},
          {"attention_cells_dense", attention_cells_dense},
          {"attention_cells_needed", attention_cells_needed}};
}

namespace {

// Draws sample i's token at step t from one logits row: the warp, then the
// inverse CDF at the Philox uniform keyed (seed, t, 0, i).
int32_t draw(const float* logits, int32_t vocab, const SamplingConfig& s, int32_t step, int32_t sample) {
  std::vector<double> lp(static_cast<size_t>(vocab));
  log_softmax_row(logits, vocab, lp.data());
  const std::vector<double> prob = warp_log_weights(lp, s);
  const double u = philox_uniform(PhiloxKey{s.seed}, static_cast<uint32_t>(step), 0, static_cast<uint32_t>(sample), 0,
                                  RandStream::target_sample);
  return static_cast<int32_t>(sample_index(prob, u));
}

void count_cells(MultiGenMetrics& m, const StepInput& in) {
  m.attention_cells_dense += static_cast<int64_t>(in.tokens.size()) * in.num_slots;
  for (int32_t r = 0; r < in.mask.rows; ++r) m.attention_cells_needed += in.mask.row_popcount(r);
  ++m.model_calls;
  m.computed_tokens += static_cast<int64_t>(in.tokens.size());
}

}  // namespace

MultiGenResult multigen_decode(Model& model, const std::vector<int32_t>& prompt, const MultiGenConfig& cfg,
                               TraceSink* trace, const DecodeOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = model.vocab_size(), k = cfg.num_samples, n = static_cast<int32_t>(prompt.size());
  prompt_check(prompt, V, "multigen");
  TS_CHECK(k >= 1, "multigen: num_samples must be >= 1, got " << k);
  TS_CHECK(cfg.max_new_tokens >= 1, "multigen: max_new_tokens must be >= 1, got " << cfg.max_new_tokens);
  model.reset();
  MultiGenResult res;
  res.samples.assign(static_cast<size_t>(k), {});
  MultiGenMetrics& m = res.metrics;
  m.prompt_len = n;
  const int64_t bps = model.kv_shape().bytes_per_slot();
  TraceRecorder rec(trace, opt.keyframe_interval);
  if (rec.on()) {
    json c = {{"num_samples", k}, {"max_new_tokens", cfg.max_new_tokens}, {"eos_token", cfg.eos_token},
              {"sampling", cfg.sampling.to_json()}, {"method", multigen_method_name(cfg.method)}, {"prompt", prompt}};
    rec.header("multigen", opt.backend, c, model.describe(), model.vocab_strings());
  }
  std::vector<char> done(static_cast<size_t>(k), 0);
  Logits logits;
  TokenTree tree;
  int32_t num_slots = 0;  // the layout's slot count (for keyframes)

  if (cfg.method == MultiGenMethod::copy) {
    // Method 1: region i = slots [i * cap, (i + 1) * cap), each a causal copy.
    // The trace's tree is the layout itself: k chains, region i's tokens in
    // slots [i * cap, i * cap + length).
    const int32_t cap = n + cfg.max_new_tokens;
    num_slots = k * cap;
    std::vector<int32_t> row_of(static_cast<size_t>(k));
    std::vector<int32_t> tip(static_cast<size_t>(k), kNoNode);  // each region's last node: written, or drawn and written next
    int32_t len = n;  // tokens per live region in the cache after this step's writes
    int64_t held = 0;  // slots written or reserved for a drawn token that the next step writes
    for (int32_t step = 0; step <= cfg.max_new_tokens; ++step) {
      StepInput in;
      in.num_slots = num_slots;
      std::vector<int32_t> who, queries;
      for (int32_t i = 0; i < k; ++i) {
        if (done[static_cast<size_t>(i)]) continue;
        std::vector<int32_t> nodes;
        if (step == 0) {
          nodes = tree.add_chain(kNoNode, prompt);
          for (int32_t p = 0; p < n; ++p) tree.node(nodes[static_cast<size_t>(p)]).slot = i * cap + p;
          held += n;
        } else {
          nodes = {tip[static_cast<size_t>(i)]};
        }
        for (int32_t id : nodes) {
          in.tokens.push_back(tree.node(id).token);
          in.positions.push_back(tree.node(id).depth);
          in.slots.push_back(tree.node(id).slot);
          who.push_back(i);
          queries.push_back(id);
        }
      }
      if (in.tokens.empty()) break;
      in.mask.reset(static_cast<int32_t>(in.tokens.size()), in.num_slots);
      for (int32_t r = 0; r < in.mask.rows; ++r)
        for (int32_t p = 0; p <= in.positions[static_cast<size_t>(r)]; ++p) in.mask.set(r, who[static_cast<size_t>(r)] * cap + p);
      model.forward(in, logits);
      count_cells(m, in);
      int64_t live = 0;
      for (int32_t i = 0; i < k; ++i) live += done[static_cast<size_t>(i)] ? 0 : 1;
      json fwd;
      if (rec.on()) fwd = {{"queries", queries}, {"positions", in.positions}, {"slots", in.slots}, {"mask", trace_mask(in.mask)}};
      // Each live sample's row: the last query of its region.
      for (int32_t r = 0; r < in.mask.rows; ++r) row_of[static_cast<size_t>(who[static_cast<size_t>(r)])] = r;
      json chosen = json::array(), added = json::array();
      if (rec.on() && step == 0)
        for (int32_t id : queries) added.push_back(trace_node(tree.node(id)));
      if (step < cfg.max_new_tokens) {
        for (int32_t i = 0; i < k; ++i) {
          if (done[static_cast<size_t>(i)]) continue;
          const int32_t tok = draw(logits.row(row_of[static_cast<size_t>(i)]), V, cfg.sampling, step, i);
          res.samples[static_cast<size_t>(i)].push_back(tok);
          const int32_t id = tree.add_child(step == 0 ? queries[static_cast<size_t>((i + 1) * n - 1)] : tip[static_cast<size_t>(i)], tok, 0.0);
          tip[static_cast<size_t>(i)] = id;
          chosen.push_back({{"sample", i}, {"node", id}, {"token", tok}});
          if (tok == cfg.eos_token || static_cast<int32_t>(res.samples[static_cast<size_t>(i)].size()) >= cfg.max_new_tokens) {
            done[static_cast<size_t>(i)] = 1;
            tree.node(id).status = NodeStatus::finished;  // never written: no slot
          } else {
            tree.node(id).slot = i * cap + len;  // written by the next step's forward
            ++held;
          }
          if (rec.on()) added.push_back(trace_node(tree.node(id)));
        }
        ++len;
      }
      m.peak_slots = std::max<int64_t>(m.peak_slots, held);
      m.steps = step + 1;
      if (rec.on())
        rec.step(step, step == 0 ? "prefill" : "decode",
                 {{"added", added}, {"forward", fwd}, {"chosen", chosen},
                  {"kv", {{"slots", held}, {"peak", m.peak_slots}, {"batch_slots", int64_t{k} * len}, {"live_samples", live}}}},
                 tree, num_slots);
      if (step == cfg.max_new_tokens) break;
    }
  } else {
    // Methods 2 and 3: one star tree, one cache.
    KvSlots slots;
    IncrementalAncestorMask mask;
    std::vector<int32_t> fed = tree.add_chain(kNoNode, prompt);
    for (int32_t id : fed) tree.node(id).slot = slots.allocate();
    mask.reset(n + k * cfg.max_new_tokens);
    std::vector<int32_t> tip(static_cast<size_t>(k), fed.back());
    std::vector<int32_t> row_of(static_cast<size_t>(k), n - 1);
    for (int32_t step = 0;; ++step) {
      StepInput in = tree_step_input(tree, fed, slots.num_slots(), &mask);
      if (cfg.method == MultiGenMethod::hybrid && step > 0) in.shared_prefix_slots = n;
      model.forward(in, logits);
      count_cells(m, in);
      m.peak_slots = std::max<int64_t>(m.peak_slots, slots.num_slots());
      json fwd = rec.on() ? tree_step_json(fed, in) : json();
      if (step > 0)
        for (size_t r = 0; r < fed.size(); ++r)
          for (int32_t i = 0; i < k; ++i)
            if (tip[static_cast<size_t>(i)] == fed[r]) row_of[static_cast<size_t>(i)] = static_cast<int32_t>(r);
      auto kv = [&] {
        return json{{"slots", slots.num_slots()}, {"peak", slots.peak()}, {"batch_slots", int64_t{k} * (n + std::min(step + 1, cfg.max_new_tokens))}};
      };
      num_slots = slots.num_slots();
      if (step == cfg.max_new_tokens) {
        if (rec.on()) rec.step(step, "decode", {{"forward", fwd}, {"kv", kv()}}, tree, num_slots);
        break;
      }
      std::vector<int32_t> next;
      json added = json::array(), chosen = json::array();
      if (rec.on() && step == 0)
        for (int32_t id : fed) added.push_back(trace_node(tree.node(id)));
      for (int32_t i = 0; i < k; ++i) {
        if (done[static_cast<size_t>(i)]) continue;
        const int32_t tok = draw(logits.row(row_of[static_cast<size_t>(i)]), V, cfg.sampling, step, i);
        res.samples[static_cast<size_t>(i)].push_back(tok);
        const int32_t id = tree.add_child(tip[static_cast<size_t>(i)], tok, 0.0);
        tip[static_cast<size_t>(i)] = id;
        chosen.push_back({{"sample", i}, {"node", id}, {"token", tok}});
        if (tok == cfg.eos_token || static_cast<int32_t>(res.samples[static_cast<size_t>(i)].size()) >= cfg.max_new_tokens) {
          done[static_cast<size_t>(i)] = 1;
          tree.node(id).status = NodeStatus::finished;
        } else {
          tree.node(id).slot = slots.allocate();  // blocked layout: the k tokens of a step sit side by side
          next.push_back(id);
        }
        if (rec.on()) added.push_back(trace_node(tree.node(id)));
      }
      m.steps = step + 1;
      num_slots = slots.num_slots();
      m.peak_slots = std::max<int64_t>(m.peak_slots, slots.peak());
      if (rec.on())
        rec.step(step, step == 0 ? "prefill" : "decode", {{"added", added}, {"forward", fwd}, {"chosen", chosen}, {"kv", kv()}}, tree,
                 num_slots);
      if (next.empty()) break;
      mask.retain(fed);
      fed = next;
    }
  }
  m.peak_bytes = m.peak_slots * bps;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) {
    json outs = json::array();
    for (auto& s : res.samples) outs.push_back({{"tokens", s}});
    rec.summary(std::move(outs), m.to_json(), m.seconds, tree, num_slots);
  }
  return res;
}

}  // namespace triescope
