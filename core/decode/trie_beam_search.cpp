#include "core/decode/trie_beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/common/error.h"
#include "core/decode/decoder_call.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/decode/beam_budget.h"
#include "core/decode/tree_step.h"
#include "core/select/log_normaliser.h"
#include "core/select/selector.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

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


// One search: the trie, its cache and the beams, advanced a step at a time
// (Alg. 2): rank, select, collect garbage, grow, feed, record.
class TrieSearch : DecoderCall<BeamConfig> {
 public:
  TrieSearch(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg, TraceSink* trace, const DecodeOptions& opt,
             LogitsConstraint* constraint)
      : DecoderCall(model, prompt, cfg, trace, opt), constraint_(constraint), b_(cfg.num_beams), bps_(model.kv_shape().bytes_per_slot()),
        finished_(cfg.num_beams, cfg.length_penalty) {}

  DecodeResult run();

 private:
  struct Beam {
    int32_t node;
    double score;
    int64_t cstate;
    int32_t logits_row;
  };
  struct Pick {
    int32_t beam;
    int32_t token;
    double score;
  };

  void check() const;
  void prefill();
  void rank(int32_t step, json* cinfo);                      // Alg. 2 line 9: the top 2b candidates
  std::vector<Pick> select(int32_t step, StepRecord& ev);    // HF BeamSearchScorer.process
  void collect_garbage(int32_t step, const std::vector<Pick>& picks);  // Alg. 2 lines 5-7
  void grow(int32_t step, const std::vector<Pick>& picks, bool feeds, StepRecord& ev);  // Alg. 2 line 10
  json feed(const std::vector<int32_t>& nodes, bool last_logits_only = false);  // logits of the last node only: a prefill
  KvRecord kv_figures(int32_t step, int32_t live_beams) const;
  void finish();

  LogitsConstraint* constraint_;
  const int32_t b_;
  const int64_t bps_;
  TokenTree tree_;
  KvSlots slots_;
  std::unique_ptr<MaskRowBuilder> mask_;
  Logits logits_;
  DecodeResult res_;
  std::vector<Beam> beams_;
  FinishedSet finished_;
  bool done_ = false;
  std::unique_ptr<Selector> selector_;  // the step's top 2b (DecodeOptions::make_selector)
  std::vector<double> lp_;
  std::vector<ScoredCandidate> cands_;
};

void TrieSearch::check() const {
  prompt_check(prompt_, V_, "trie beam search");
  TS_CHECK(2 * b_ <= V_, "trie beam search: num_beams " << b_ << " needs vocabulary >= " << 2 * b_ << ", model has " << V_);
  TS_CHECK(cfg_.eos_token < V_, "trie beam search: eos_token " << cfg_.eos_token << " outside vocabulary");
  // The prefill's n rows or a step's ~2b candidate rows (and the rows the
  // builder holds), over up to n + b x max_new_tokens slots.
  const double rows = std::max(static_cast<double>(n_), 2.0 * b_), width = static_cast<double>(n_) + double{1} * b_ * cfg_.max_new_tokens;
  beam_budget_check("trie beam search", cfg_, n_, bps_, 2 * rows * width, rows * V_);
}

json TrieSearch::feed(const std::vector<int32_t>& nodes, bool last_logits_only) {
  // Unconstrained, a device selector ranks the rows where the model left
  // them; then, untraced (a trace records the mask rows), the mask rows too
  // stay where the builder made them, if the model reads them there.
  const bool logits_stay = !last_logits_only && !constraint_ && selector_->reads_device_logits();
  const bool mask_stays = logits_stay && !rec_.on() && mask_->builds_on_device() && model_.reads_device_mask();
  StepInput in = tree_step_input(tree_, nodes, slots_.num_slots(), mask_.get(), mask_stays);
  if (last_logits_only) in.logits_rows = {static_cast<int32_t>(nodes.size()) - 1};
  in.logits_may_stay_on_device = logits_stay;
  model_.forward(in, logits_);
  logits_keep_rows(in, logits_);
  ++res_.metrics.model_calls;
  res_.metrics.computed_tokens += static_cast<int64_t>(nodes.size());
  return rec_.on() ? tree_step_json(nodes, in) : json();
}

KvRecord TrieSearch::kv_figures(int32_t step, int32_t live_beams) const {
  const int64_t batch = batch_baseline_slots(b_, n_, step);
  return {.slots = slots_.num_slots(), .peak = slots_.peak(), .bytes = slots_.num_slots() * bps_,
          .batch_slots = batch, .batch_bytes = batch * bps_, .live_beams = live_beams};
}

// The prompt is a chain at the root (positions 0..n-1).
void TrieSearch::prefill() {
  const std::vector<int32_t> prompt_nodes = tree_.add_chain(kNoNode, prompt_);
  for (int32_t id : prompt_nodes) tree_.node(id).slot = slots_.allocate();
  mask_->reset(n_ + b_ * cfg_.max_new_tokens);
  StepRecord ev(rec_);
  ev.added(tree_, prompt_nodes);
  json fwd = feed(prompt_nodes, true);
  ev.forward([&] { return std::move(fwd); });
  ev.kv([&] { return kv_figures(0, 1); });
  rec_.step(0, "prefill", ev, tree_, slots_.num_slots());
  beams_ = {{prompt_nodes.back(), 0.0, constraint_ ? constraint_->initial_state() : 0, 0}};  // the prefill's one logits row
}

void TrieSearch::rank(int32_t step, json* cinfo) {
  const int32_t nb = static_cast<int32_t>(beams_.size());
  std::vector<double> beam_scores;
  std::vector<const float*> rows;
  std::vector<int64_t> states;
  const bool on_host = !logits_.on_device();
  for (const Beam& bm : beams_) {
    beam_scores.push_back(bm.score);
    if (on_host) rows.push_back(logits_.row(bm.logits_row));
    states.push_back(bm.cstate);
  }
  // A constraint that ranks sparsely scores only its allowed tokens; otherwise
  // every row is log-softmaxed, masked, and all (beam, token) pairs ranked.
  // Alg. 2 line 9: the top 2b (beam, token) pairs, ties to the lower flat index.
  if (constraint_ && constraint_->rank(states, step - 1, rows, beam_scores.data(), V_, 2 * b_, cands_, cinfo)) return;
  if (!on_host) {  // the rows stayed on the device (feed): only the 2b candidates cross to the host
    std::vector<int32_t> row_ids;
    for (const Beam& bm : beams_) row_ids.push_back(bm.logits_row);
    cands_ = selector_->run_device_logits(logits_.device, V_, row_ids, beam_scores.data(), 2 * b_);
    return;
  }
  if (!constraint_) {
    cands_ = selector_->run_logits(rows, beam_scores.data(), 2 * b_);
    return;
  }
  lp_.resize(static_cast<size_t>(nb) * static_cast<size_t>(V_));
  log_softmax_rows(rows, V_, lp_.data());
  constraint_->apply(states, step - 1, lp_.data(), V_, cinfo);
  cands_ = selector_->run_logprobs(lp_.data(), nb, beam_scores.data(), 2 * b_);
}

// Candidates in rank order: an EOS among the first b finishes its beam (a
// finished node in the trie), the rest extend until b are picked.
std::vector<TrieSearch::Pick> TrieSearch::select(int32_t step, StepRecord& ev) {
  std::vector<Pick> picks;
  for (size_t rank = 0; rank < cands_.size() && static_cast<int32_t>(picks.size()) < b_; ++rank) {
    const int32_t bi = static_cast<int32_t>(cands_[rank].flat / V_), tok = static_cast<int32_t>(cands_[rank].flat % V_);
    if (tok != cfg_.eos_token) {
      picks.push_back({bi, tok, cands_[rank].score});
      continue;
    }
    if (static_cast<int32_t>(rank) >= b_) continue;
    const int32_t parent = beams_[static_cast<size_t>(bi)].node;
    std::vector<int32_t> gen = tree_.path_tokens(parent);
    gen.erase(gen.begin(), gen.begin() + n_);
    finished_.offer(std::move(gen), cands_[rank].score, step);
    const int32_t id = tree_.add_child(parent, tok, cands_[rank].score);
    tree_.node(id).status = NodeStatus::finished;
    ev.added(tree_, id);
  }
  done_ = search_done(cfg_, finished_, cands_, step);
  if (picks.empty()) done_ = true;  // a constraint left nothing to extend
  return picks;
}

// GC before the new nodes take slots: keep the ancestors of every beam that
// survives into the next step.
void TrieSearch::collect_garbage(int32_t step, const std::vector<Pick>& picks) {
  std::vector<int32_t> live;
  for (const Pick& p : picks) live.push_back(beams_[static_cast<size_t>(p.beam)].node);
  const CompactionPlan plan = kv_collect_garbage(tree_, live, slots_.num_slots());
  model_.compact(plan);
  slots_.apply(plan);
  mask_->reset(slots_.num_slots() + b_ * (cfg_.max_new_tokens - step + 1));  // Alg. 2 line 7: recompute
  ++res_.metrics.gc_runs;
  rec_.gc(step, plan);
}

// A child per pick, the childless beams pruned up to the prompt, and (unless
// the search ends here) the new nodes fed.
void TrieSearch::grow(int32_t step, const std::vector<Pick>& picks, bool feeds, StepRecord& ev) {
  std::vector<Beam> next;
  std::vector<int32_t> new_nodes;
  std::vector<int32_t> parents;  // rows the incremental mask must keep
  std::vector<char> has_child(beams_.size(), 0);
  for (const Pick& p : picks) {
    const Beam& from = beams_[static_cast<size_t>(p.beam)];
    const int32_t id = tree_.add_child(from.node, p.token, p.score);
    tree_.node(id).slot = slots_.allocate();
    has_child[static_cast<size_t>(p.beam)] = 1;
    parents.push_back(from.node);
    next.push_back({id, p.score, constraint_ ? constraint_->next_state(from.cstate, p.token, step - 1) : 0,
                    static_cast<int32_t>(new_nodes.size())});
    new_nodes.push_back(id);
    ev.added(tree_, id);
    ev.push("chosen", [&] { return json{{"beam", next.size() - 1}, {"from_beam", p.beam}, {"node", id}, {"token", p.token}, {"score", p.score}}; });
  }
  for (size_t i = 0; i < beams_.size(); ++i)
    if (!has_child[i]) ev.pruned(tree_.prune_upwards(beams_[i].node, n_));  // never prune the prompt
  beams_ = std::move(next);
  if (!feeds) return;
  mask_->retain(parents);  // a new row = its parent's row + its own bit
  json fwd = feed(new_nodes);
  ev.forward([&] { return std::move(fwd); });
}

// Finalize (HF): running beams join the finished set unless the search stopped early.
void TrieSearch::finish() {
  if (!done_)
    for (const Beam& bm : beams_) {
      std::vector<int32_t> gen = tree_.path_tokens(bm.node);
      gen.erase(gen.begin(), gen.begin() + n_);
      const int32_t len = static_cast<int32_t>(gen.size());
      finished_.offer(std::move(gen), bm.score, len);
    }
  res_.hypotheses = finished_.best_first();
  DecodeMetrics& m = res_.metrics;
  m.final_slots = slots_.num_slots();
  m.peak_slots = slots_.peak();  // KvSlots keeps the high-water mark across compactions
  m.batch_peak_slots = batch_baseline_slots(b_, n_, m.steps);  // grows with every step
  m.peak_bytes = m.peak_slots * bps_;
  m.batch_peak_bytes = m.batch_peak_slots * bps_;
  m.output_len = res_.hypotheses.empty() ? 0 : static_cast<int32_t>(res_.hypotheses.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n_, m.output_len);
  m.batch_mem_per_token = mem_per_token(m.batch_peak_bytes, n_, m.output_len);
}

DecodeResult TrieSearch::run() {
  const auto t0 = std::chrono::steady_clock::now();
  check();
  model_.reset();
  mask_ = opt_.make_mask ? opt_.make_mask() : std::make_unique<IncrementalAncestorMask>();
  selector_ = selector_make(opt_.make_selector, {b_, V_, 2 * b_});  // at most b beams a step
  res_.metrics.prompt_len = n_;
  record_header(rec_, trie_beam_search_spec(), opt_, model_, [&] {
    json config = {{"beam", cfg_.to_json()}, {"prompt", prompt_}};
    if (constraint_) config["constraint"] = constraint_->describe();
    return config;
  });
  prefill();
  for (int32_t step = 1; step <= cfg_.max_new_tokens && !done_; ++step) {
    StepRecord ev(rec_, {"added", "status", "chosen"});
    json cinfo = constraint_ ? json::array() : json();
    rank(step, ev.on() ? &cinfo : nullptr);
    const std::vector<Pick> picks = select(step, ev);
    const bool feeds = !done_ && step < cfg_.max_new_tokens;
    if (feeds && cfg_.gc_interval > 0 && step % cfg_.gc_interval == 0) collect_garbage(step, picks);
    grow(step, picks, feeds, ev);
    res_.metrics.steps = step;
    ev.kv([&] { return kv_figures(step, static_cast<int32_t>(beams_.size())); });
    if (constraint_) ev.set("constraint", [&] { return std::move(cinfo); });
    rec_.step(step, "expand", ev, tree_, slots_.num_slots());
  }
  finish();
  res_.metrics.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec_, [&] { return hypotheses_json(res_.hypotheses); }, [&] { return res_.metrics.to_json(); }, res_.metrics.seconds,
                 &tree_, slots_.num_slots());
  return res_;
}

}  // namespace

DecodeResult trie_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                              TraceSink* trace, const DecodeOptions& opt, LogitsConstraint* constraint) {
  return TrieSearch(model, prompt, cfg, trace, opt, constraint).run();
}

}  // namespace triescope
