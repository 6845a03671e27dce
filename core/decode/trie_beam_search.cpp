#include "core/decode/trie_beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/common/error.h"
#include "core/decode/beam_budget.h"
#include "core/decode/tree_step.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

void prompt_check(const std::vector<int32_t>& prompt, int32_t vocab_size, const char* who) {
  TS_CHECK(!prompt.empty(), who << ": prompt must hold at least one token");
  for (size_t i = 0; i < prompt.size(); ++i)
    TS_CHECK(prompt[i] >= 0 && prompt[i] < vocab_size,
             who << ": prompt[" << i << "] = " << prompt[i] << " outside vocabulary [0, " << vocab_size << ")");
}

namespace {

// The finished hypotheses, kept as the num_beams best (HF BeamHypotheses).
class FinishedSet {
 public:
  FinishedSet(int32_t capacity, double length_penalty) : cap_(capacity), lp_(length_penalty) {}
  void offer(std::vector<int32_t> tokens, double sum_logprobs, int32_t generated_len) {
    const double score = sum_logprobs / std::pow(static_cast<double>(generated_len), lp_);
    if (static_cast<int32_t>(items_.size()) >= cap_ && !(score > worst_)) return;
    items_.push_back({std::move(tokens), score, sum_logprobs});
    if (static_cast<int32_t>(items_.size()) > cap_) {
      // drop the lowest score; among equal scores the earliest added (HF sorts (score, index)).
      size_t lo = 0;
      for (size_t i = 1; i < items_.size(); ++i)
        if (items_[i].score < items_[lo].score) lo = i;
      items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(lo));
      worst_ = items_.front().score;
      for (auto& h : items_) worst_ = std::min(worst_, h.score);
    } else {
      worst_ = std::min(worst_, score);
    }
  }
  bool full() const { return static_cast<int32_t>(items_.size()) >= cap_; }
  double worst() const { return worst_; }
  std::vector<Hypothesis> best_first() const {
    std::vector<Hypothesis> v = items_;
    std::stable_sort(v.begin(), v.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    std::reverse(v.begin(), v.end());  // HF pops from the back of an ascending stable sort
    return v;
  }

 private:
  int32_t cap_;
  double lp_;
  double worst_ = 1e9;
  std::vector<Hypothesis> items_;
};

// HF's stopping rule: the finished set is full and no running beam can beat
// its worst (early_stopping true: as soon as it is full; "never": measured at
// the longest possible length).
bool search_done(const BeamConfig& cfg, const FinishedSet& finished, const std::vector<ScoredCandidate>& cands, int32_t step) {
  if (!finished.full() || cands.empty()) return false;
  if (cfg.early_stopping == EarlyStopping::yes) return true;
  const double best = cands.front().score;
  const double len = (cfg.early_stopping == EarlyStopping::never && cfg.length_penalty > 0.0) ? cfg.max_new_tokens : step;
  return finished.worst() >= best / std::pow(len, cfg.length_penalty);
}

}  // namespace

DecodeResult trie_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                              TraceSink* trace, const DecodeOptions& opt, LogitsConstraint* constraint) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = model.vocab_size();
  const int32_t b = cfg.num_beams;
  const int32_t n = static_cast<int32_t>(prompt.size());
  prompt_check(prompt, V, "trie beam search");
  TS_CHECK(2 * b <= V, "trie beam search: num_beams " << b << " needs vocabulary >= " << 2 * b << ", model has " << V);
  TS_CHECK(cfg.eos_token < V, "trie beam search: eos_token " << cfg.eos_token << " outside vocabulary");

  {
    // The prefill's n rows or a step's ~2b candidate rows (and the rows the
    // builder holds), over up to n + b x max_new_tokens slots.
    const double rows = std::max(static_cast<double>(n), 2.0 * b), width = static_cast<double>(n) + double{1} * b * cfg.max_new_tokens;
    beam_budget_check("trie beam search", cfg, n, model.kv_shape().bytes_per_slot(), 2 * rows * width, rows * V);
  }
  model.reset();
  TokenTree tree;
  KvSlots slots;
  std::unique_ptr<MaskRowBuilder> mask_owner =
      opt.make_mask ? opt.make_mask() : std::make_unique<IncrementalAncestorMask>();
  MaskRowBuilder& mask = *mask_owner;
  const int64_t bps = model.kv_shape().bytes_per_slot();
  DecodeResult res;
  DecodeMetrics& m = res.metrics;
  m.prompt_len = n;

  TraceRecorder rec(trace, opt.keyframe_interval);
  if (rec.on()) {
    json config = {{"beam", cfg.to_json()}, {"prompt", prompt}};
    if (constraint) config["constraint"] = constraint->describe();
    rec.header("trie_beam_search", opt.backend, config, model.describe(), model.vocab_strings());
  }

  Logits logits;
  auto feed = [&](const std::vector<int32_t>& nodes) -> json {
    const StepInput in = tree_step_input(tree, nodes, slots.num_slots(), &mask);
    model.forward(in, logits);
    ++m.model_calls;
    m.computed_tokens += static_cast<int64_t>(nodes.size());
    return rec.on() ? tree_step_json(nodes, in) : json();
  };
  auto kv_json = [&](int32_t step, int32_t live_beams) {
    const int64_t batch = batch_baseline_slots(b, n, step);
    return json{{"slots", slots.num_slots()}, {"peak", slots.peak()},      {"bytes", slots.num_slots() * bps},
                {"batch_slots", batch},       {"batch_bytes", batch * bps}, {"live_beams", live_beams}};
  };

  // Prefill: the prompt is a chain at the root (positions 0..n-1).
  std::vector<int32_t> prompt_nodes = tree.add_chain(kNoNode, prompt);
  for (int32_t id : prompt_nodes) tree.node(id).slot = slots.allocate();
  mask.reset(n + b * cfg.max_new_tokens);
  {
    json fwd = feed(prompt_nodes);
    if (rec.on()) {
      json added = json::array();
      for (int32_t id : prompt_nodes) added.push_back(trace_node(tree.node(id)));
      rec.step(0, "prefill", {{"added", added}, {"forward", fwd}, {"kv", kv_json(0, 1)}}, tree, slots.num_slots());
    }
  }

  struct Beam {
    int32_t node;
    double score;
    int64_t cstate;
    int32_t logits_row;
  };
  std::vector<Beam> beams = {{prompt_nodes.back(), 0.0, constraint ? constraint->initial_state() : 0, n - 1}};
  FinishedSet finished(b, cfg.length_penalty);
  bool done = false;
  std::vector<double> lp;
  std::vector<ScoredCandidate> cands;

  for (int32_t step = 1; step <= cfg.max_new_tokens && !done; ++step) {
    // Alg. 2 line 9: score every (beam, token) and keep the top 2b.
    const int32_t nb = static_cast<int32_t>(beams.size());
    std::vector<double> beam_scores;
    std::vector<const float*> rows;
    std::vector<int64_t> states;
    for (const Beam& bm : beams) {
      beam_scores.push_back(bm.score);
      rows.push_back(logits.row(bm.logits_row));
      states.push_back(bm.cstate);
    }
    json cinfo;
    if (constraint) cinfo = json::array();
    // A constraint that ranks sparsely scores only its allowed tokens; otherwise
    // every row is log-softmaxed, masked, and all (beam, token) pairs ranked.
    if (!constraint || !constraint->rank(states, step - 1, rows, beam_scores.data(), V, 2 * b, cands, rec.on() ? &cinfo : nullptr)) {
      lp.resize(static_cast<size_t>(nb) * static_cast<size_t>(V));
      for (int32_t i = 0; i < nb; ++i) log_softmax_row(rows[static_cast<size_t>(i)], V, lp.data() + static_cast<size_t>(i) * V);
      if (constraint) constraint->apply(states, step - 1, lp.data(), V, rec.on() ? &cinfo : nullptr);
      // Alg. 2 line 9: the top 2b (beam, token) pairs, ties to the lower flat index.
      cands = topk_candidates(lp.data(), nb, V, beam_scores.data(), 2 * b);
    }

    // Process the candidates in rank order (HF BeamSearchScorer.process).
    struct Pick { int32_t beam; int32_t token; double score; };
    std::vector<Pick> picks;
    json chosen = json::array(), added = json::array(), status = json::array();
    for (size_t rank = 0; rank < cands.size() && static_cast<int32_t>(picks.size()) < b; ++rank) {
      const int32_t bi = static_cast<int32_t>(cands[rank].flat / V), tok = static_cast<int32_t>(cands[rank].flat % V);
      if (tok == cfg.eos_token) {
        if (static_cast<int32_t>(rank) >= b) continue;
        const int32_t parent = beams[static_cast<size_t>(bi)].node;
        std::vector<int32_t> gen = tree.path_tokens(parent);
        gen.erase(gen.begin(), gen.begin() + n);
        finished.offer(std::move(gen), cands[rank].score, step);
        const int32_t id = tree.add_child(parent, tok, cands[rank].score);
        tree.node(id).status = NodeStatus::finished;
        if (rec.on()) added.push_back(trace_node(tree.node(id)));
        continue;
      }
      picks.push_back({bi, tok, cands[rank].score});
    }
    done = search_done(cfg, finished, cands, step);
    if (picks.empty()) done = true;  // a constraint left nothing to extend

    // GC before the new nodes take slots (Alg. 2 lines 5-7): keep the
    // ancestors of every beam that survives into the next step.
    if (!done && step < cfg.max_new_tokens && cfg.gc_interval > 0 && step % cfg.gc_interval == 0) {
      std::vector<int32_t> live;
      for (auto& p : picks) live.push_back(beams[static_cast<size_t>(p.beam)].node);
      const CompactionPlan plan = kv_collect_garbage(tree, live, slots.num_slots());
      model.compact(plan);
      slots.apply(plan);
      mask.reset(slots.num_slots() + b * (cfg.max_new_tokens - step + 1));  // Alg. 2 line 7: recompute
      ++m.gc_runs;
      rec.gc(step, plan);
    }

    // Alg. 2 line 10: grow the trie.
    std::vector<Beam> next;
    std::vector<int32_t> new_nodes;
    std::vector<int32_t> parents;  // rows the incremental mask must keep
    std::vector<char> has_child(static_cast<size_t>(nb), 0);
    const bool feeds = !done && step < cfg.max_new_tokens;
    for (auto& p : picks) {
      const Beam& from = beams[static_cast<size_t>(p.beam)];
      const int32_t id = tree.add_child(from.node, p.token, p.score);
      tree.node(id).slot = slots.allocate();
      has_child[static_cast<size_t>(p.beam)] = 1;
      parents.push_back(from.node);
      next.push_back({id, p.score, constraint ? constraint->next_state(from.cstate, p.token, step - 1) : 0,
                      static_cast<int32_t>(new_nodes.size())});
      new_nodes.push_back(id);
      if (rec.on()) {
        added.push_back(trace_node(tree.node(id)));
        chosen.push_back({{"beam", next.size() - 1}, {"from_beam", p.beam}, {"node", id}, {"token", p.token}, {"score", p.score}});
      }
    }
    for (int32_t i = 0; i < nb; ++i)
      if (!has_child[static_cast<size_t>(i)]) {
        const int32_t dead = beams[static_cast<size_t>(i)].node;
        for (int32_t id : tree.prune_upwards(dead, n))  // never prune the prompt
          if (rec.on()) status.push_back({{"node", id}, {"status", "pruned"}});
      }
    beams = std::move(next);
    m.steps = step;

    json fwd;
    if (feeds) {
      mask.retain(parents);  // a new row = its parent's row + its own bit
      fwd = feed(new_nodes);
    }
    if (rec.on()) {
      json fields = {{"added", added}, {"status", status}, {"chosen", chosen}, {"kv", kv_json(step, static_cast<int32_t>(beams.size()))}};
      if (feeds) fields["forward"] = fwd;
      if (constraint) fields["constraint"] = cinfo;
      rec.step(step, "expand", std::move(fields), tree, slots.num_slots());
    }
  }

  // Finalize (HF): running beams join the finished set unless the search stopped early.
  if (!done)
    for (auto& bm : beams) {
      std::vector<int32_t> gen = tree.path_tokens(bm.node);
      gen.erase(gen.begin(), gen.begin() + n);
      const int32_t len = static_cast<int32_t>(gen.size());
      finished.offer(std::move(gen), bm.score, len);
    }
  res.hypotheses = finished.best_first();
  m.final_slots = slots.num_slots();
  m.peak_slots = slots.peak();  // KvSlots keeps the high-water mark across compactions
  m.batch_peak_slots = batch_baseline_slots(b, n, m.steps);  // grows with every step
  m.peak_bytes = m.peak_slots * bps;
  m.batch_peak_bytes = m.batch_peak_slots * bps;
  m.output_len = res.hypotheses.empty() ? 0 : static_cast<int32_t>(res.hypotheses.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n, m.output_len);
  m.batch_mem_per_token = mem_per_token(m.batch_peak_bytes, n, m.output_len);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) {
    json outs = json::array();
    for (auto& h : res.hypotheses) outs.push_back({{"tokens", h.tokens}, {"score", h.score}, {"sum_logprobs", h.sum_logprobs}});
    rec.summary(std::move(outs), m.to_json(), m.seconds, tree, slots.num_slots());
  }
  return res;
}

}  // namespace triescope
