#include "core/decode/batch_beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/common/error.h"
#include "core/decode/beam_budget.h"
#include "core/select/log_normaliser.h"
#include "core/select/selector.h"
#include "core/decode/decoder_call.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

namespace {

// HF BeamHypotheses, literally: a list of (score, tokens), the worst dropped
// when it grows past num_beams.
struct BeamHyps {
  int32_t num_beams;
  double length_penalty;
  double worst_score = 1e9;
  std::vector<Hypothesis> beams;

  void add(const std::vector<int32_t>& hyp, double sum_logprobs, int32_t generated_len) {
    const double score = sum_logprobs / std::pow(static_cast<double>(generated_len), length_penalty);
    if (static_cast<int32_t>(beams.size()) < num_beams || score > worst_score) {
      beams.push_back({hyp, score, sum_logprobs});
      if (static_cast<int32_t>(beams.size()) > num_beams) {
        std::vector<std::pair<double, size_t>> sorted_scores;
        for (size_t i = 0; i < beams.size(); ++i) sorted_scores.emplace_back(beams[i].score, i);
        std::sort(sorted_scores.begin(), sorted_scores.end());
        beams.erase(beams.begin() + static_cast<std::ptrdiff_t>(sorted_scores[0].second));
        worst_score = sorted_scores[1].first;
      } else {
        worst_score = std::min(score, worst_score);
      }
    }
  }
  bool is_done(double best_sum_logprobs, int32_t generated, EarlyStopping es, int32_t max_new) const {
    if (static_cast<int32_t>(beams.size()) < num_beams) return false;
    if (es == EarlyStopping::yes) return true;
    const double len = (es == EarlyStopping::never && length_penalty > 0.0) ? max_new : generated;
    return worst_score >= best_sum_logprobs / std::pow(len, length_penalty);
  }
};


// One search over B full rows (HF generate with num_beams): rank, select,
// reorder the rows and their cache in one gather, feed, record.
class BatchSearch : DecoderCall<BeamConfig> {
 public:
  BatchSearch(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg, TraceSink* trace, const DecodeOptions& opt,
              LogitsConstraint* constraint)
      : DecoderCall(model, prompt, cfg, trace, opt), constraint_(constraint), B_(cfg.num_beams), cap_(n_ + cfg.max_new_tokens),
        bps_(model.kv_shape().bytes_per_slot()), hyps_{B_, cfg.length_penalty, 1e9, {}} {}

  DecodeResult run();

 private:
  // The rows picked for the next step, in rank order.
  struct Next {
    std::vector<int32_t> tokens, rows;
    std::vector<double> scores;
  };

  void check() const;
  json forward(int32_t first_pos, int32_t count);
  KvRecord kv_figures(int32_t generated);
  void rank(int32_t cur, json* cinfo);
  Next select(int32_t cur, StepRecord& ev);
  void reorder(int32_t cur, const Next& next);
  void finish();

  LogitsConstraint* constraint_;
  const int32_t B_, cap_;  // cap_: slots per beam region
  const int64_t bps_;
  DecodeResult res_;
  Logits logits_;
  std::vector<std::vector<int32_t>> input_ids_;  // [B] the prompt, then each row's generated tokens
  std::vector<double> beam_scores_;              // [B]
  std::vector<int64_t> cstates_;                 // [B] constraint states
  int32_t rows_ = 0;  // rows in use (fewer only when a constraint leaves fewer beams)
  BeamHyps hyps_;
  bool done_ = false;
  std::unique_ptr<Selector> selector_;      // the step's top 2B (DecodeOptions::make_selector)
  std::vector<double> lp_;                  // [rows * V] log-softmax of each row's logits
  std::vector<ScoredCandidate> ranked_;     // the top 2B (score, flat index), best first
};

void BatchSearch::check() const {
  prompt_check(prompt_, V_, "batch beam search");
  TS_CHECK(2 * B_ <= V_, "batch beam search: num_beams " << B_ << " needs vocabulary >= " << 2 * B_);
  // The prefill is the biggest pass: B x n rows over B regions of n + max_new_tokens slots.
  const double region = static_cast<double>(n_) + cfg_.max_new_tokens, rows0 = static_cast<double>(B_) * n_;
  beam_budget_check("batch beam search", cfg_, n_, bps_, rows0 * B_ * region, rows0 * V_);
  TS_CHECK(B_ * region <= kTraceMaxSlots, "batch beam search: beam.num_beams x (prompt + beam.max_new_tokens) = "
                                              << static_cast<int64_t>(B_ * region) << " slots, more than " << kTraceMaxSlots);
}

// Positions first_pos .. first_pos + count - 1 of every row in use, causal
// inside each row's region; logits for each row's last position only.
json BatchSearch::forward(int32_t first_pos, int32_t count) {
  StepInput in;
  in.num_slots = B_ * cap_;
  in.mask.reset(rows_ * count, in.num_slots);
  for (int32_t r = 0; r < rows_; ++r)
    for (int32_t k = 0; k < count; ++k) {
      const int32_t pos = first_pos + k;
      in.tokens.push_back(input_ids_[static_cast<size_t>(r)][static_cast<size_t>(pos)]);
      in.positions.push_back(pos);
      in.slots.push_back(r * cap_ + pos);
      for (int32_t c = 0; c <= pos; ++c) in.mask.set(r * count + k, r * cap_ + c);
    }
  for (int32_t r = 0; r < rows_ && count > 1; ++r) in.logits_rows.push_back(r * count + count - 1);  // each row's last position only
  // A decode step, unconstrained: a device selector ranks the rows where the model left them.
  in.logits_may_stay_on_device = count == 1 && !constraint_ && selector_->reads_device_logits();
  model_.forward(in, logits_);
  logits_keep_rows(in, logits_);  // logits row r: row r's last position
  ++res_.metrics.model_calls;
  res_.metrics.computed_tokens += static_cast<int64_t>(in.tokens.size());
  if (!rec_.on()) return json();
  return ForwardView{{}, in.positions, in.slots, in.mask}.to_json();  // no tree: no queries
}

// The cache after `generated` tokens (its high-water mark counted here).
KvRecord BatchSearch::kv_figures(int32_t generated) {
  const int64_t used = int64_t{B_} * (n_ + generated);
  DecodeMetrics& m = res_.metrics;
  m.peak_slots = std::max(m.peak_slots, used);
  return {.slots = used, .peak = m.peak_slots, .bytes = used * bps_, .batch_slots = used, .batch_bytes = used * bps_, .live_beams = rows_};
}

// next_token_scores = log_softmax(logits) (+ constraint mask) + beam_scores[:, None]
// over the flattened [rows * V], and its top 2B (torch.topk, ties to the
// lower flat index): the selector (topk_candidates on the CPU), which never
// materialises the sums.
void BatchSearch::rank(int32_t cur, json* cinfo) {
  const int32_t k = static_cast<int32_t>(std::min<int64_t>(2 * B_, int64_t{rows_} * V_));
  if (logits_.on_device()) {  // the rows stayed on the device (forward): only the 2B candidates cross
    std::vector<int32_t> row_ids(static_cast<size_t>(rows_));
    std::iota(row_ids.begin(), row_ids.end(), 0);
    ranked_ = selector_->run_device_logits(logits_.device, V_, row_ids, beam_scores_.data(), k);
    return;
  }
  const std::vector<int64_t> row_states(cstates_.begin(), cstates_.begin() + rows_);
  std::vector<const float*> row_logits;
  for (int32_t r = 0; r < rows_; ++r) row_logits.push_back(logits_.row(r));
  // A constraint that ranks sparsely scores only its allowed tokens (the
  // same finite candidates in the same order as the full ranking below).
  ranked_.clear();
  if (constraint_ && constraint_->rank(row_states, cur - 1, row_logits, beam_scores_.data(), V_, k, ranked_, cinfo)) return;
  if (!constraint_) {
    ranked_ = selector_->run_logits(row_logits, beam_scores_.data(), k);
    return;
  }
  lp_.resize(static_cast<size_t>(rows_) * static_cast<size_t>(V_));
  log_softmax_rows(row_logits, V_, lp_.data());
  constraint_->apply(row_states, cur - 1, lp_.data(), V_, cinfo);
  ranked_ = selector_->run_logprobs(lp_.data(), rows_, beam_scores_.data(), k);
}

// HF BeamSearchScorer.process: an EOS among the first B finishes its row, the
// rest continue until B are picked.
BatchSearch::Next BatchSearch::select(int32_t cur, StepRecord& ev) {
  Next next;
  for (size_t rank = 0; rank < ranked_.size(); ++rank) {
    const double sc = ranked_[rank].score;
    if (std::isinf(sc) || sc <= -1e8) continue;  // masked, or a not-yet-live copy
    const int32_t r = static_cast<int32_t>(ranked_[rank].flat / V_), tok = static_cast<int32_t>(ranked_[rank].flat % V_);
    if (tok == cfg_.eos_token) {
      if (static_cast<int32_t>(rank) >= B_) continue;
      const std::vector<int32_t>& ids = input_ids_[static_cast<size_t>(r)];
      hyps_.add(std::vector<int32_t>(ids.begin() + n_, ids.end()), sc, cur);
      continue;
    }
    next.tokens.push_back(tok);
    next.rows.push_back(r);
    next.scores.push_back(sc);
    ev.push("chosen", [&] { return json{{"beam", next.tokens.size() - 1}, {"from_beam", r}, {"token", tok}, {"score", sc}}; });
    if (static_cast<int32_t>(next.tokens.size()) == B_) break;
  }
  const double best = ranked_.empty() ? -INFINITY : ranked_[0].score;
  done_ = hyps_.is_done(best, cur, cfg_.early_stopping, cfg_.max_new_tokens) || next.tokens.empty();
  return next;
}

// input_ids = cat(input_ids[beam_idx], next_tokens); the cache reordered by
// beam_idx in one gather.
void BatchSearch::reorder(int32_t cur, const Next& next) {
  const int32_t new_rows = static_cast<int32_t>(next.tokens.size());
  CompactionPlan plan;
  plan.old_num_slots = B_ * cap_;
  plan.src.resize(static_cast<size_t>(B_) * static_cast<size_t>(cap_));
  for (int32_t j = 0; j < B_; ++j)
    for (int32_t p = 0; p < cap_; ++p)
      plan.src[static_cast<size_t>(j) * cap_ + static_cast<size_t>(p)] = (j < new_rows ? next.rows[static_cast<size_t>(j)] : j) * cap_ + p;
  const std::vector<int64_t> prev_cstates = cstates_;  // rows are gathered: read the old states, not ones already overwritten
  std::vector<std::vector<int32_t>> reordered;
  for (int32_t j = 0; j < new_rows; ++j) {
    const auto from = static_cast<size_t>(next.rows[static_cast<size_t>(j)]);
    const int32_t tok = next.tokens[static_cast<size_t>(j)];
    reordered.push_back(input_ids_[from]);
    reordered.back().push_back(tok);
    beam_scores_[static_cast<size_t>(j)] = next.scores[static_cast<size_t>(j)];
    if (constraint_) cstates_[static_cast<size_t>(j)] = constraint_->next_state(prev_cstates[from], tok, cur - 1);
  }
  model_.compact(plan);
  for (int32_t j = new_rows; j < B_; ++j) reordered.push_back(input_ids_[static_cast<size_t>(j)]);
  input_ids_ = std::move(reordered);
  rows_ = std::max(new_rows, 0);
}

void BatchSearch::finish() {
  if (!done_)
    for (int32_t r = 0; r < rows_; ++r) {
      std::vector<int32_t> gen(input_ids_[static_cast<size_t>(r)].begin() + n_, input_ids_[static_cast<size_t>(r)].end());
      hyps_.add(gen, beam_scores_[static_cast<size_t>(r)], static_cast<int32_t>(gen.size()));
    }
  std::vector<Hypothesis> sorted = hyps_.beams;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Hypothesis& a, const Hypothesis& c) { return a.score < c.score; });
  res_.hypotheses.assign(sorted.rbegin(), sorted.rend());
  DecodeMetrics& m = res_.metrics;
  m.final_slots = int64_t{B_} * (n_ + m.steps);
  m.batch_peak_slots = m.peak_slots;
  m.peak_bytes = m.peak_slots * bps_;
  m.batch_peak_bytes = m.peak_bytes;
  m.output_len = res_.hypotheses.empty() ? 0 : static_cast<int32_t>(res_.hypotheses.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n_, m.output_len);
  m.batch_mem_per_token = m.mem_per_token;
}

DecodeResult BatchSearch::run() {
  const auto t0 = std::chrono::steady_clock::now();
  check();
  res_.metrics.prompt_len = n_;
  model_.reset();
  selector_ = selector_make(opt_.make_selector, {B_, V_, 2 * B_});  // at most B rows a step
  record_header(rec_, batch_beam_search_spec(), opt_, model_, [&] {
    json config = {{"beam", cfg_.to_json()}, {"prompt", prompt_}};
    if (constraint_) config["constraint"] = constraint_->describe();
    return config;
  });
  input_ids_.assign(static_cast<size_t>(B_), prompt_);
  beam_scores_.assign(static_cast<size_t>(B_), -1e9);
  beam_scores_[0] = 0.0;  // HF: only the first copy is live at the start
  cstates_.assign(static_cast<size_t>(B_), constraint_ ? constraint_->initial_state() : 0);
  rows_ = B_;
  StepRecord prefill(rec_);
  json fwd = forward(0, n_);
  KvRecord kv = kv_figures(0);
  prefill.forward([&] { return std::move(fwd); });
  prefill.kv([&] { return std::move(kv); });
  rec_.step(0, "prefill", prefill);
  for (int32_t cur = 1; cur <= cfg_.max_new_tokens && !done_; ++cur) {
    StepRecord ev(rec_, {"chosen"});
    json cinfo = constraint_ ? json::array() : json();
    rank(cur, ev.on() ? &cinfo : nullptr);
    reorder(cur, select(cur, ev));
    res_.metrics.steps = cur;
    if (!done_ && cur < cfg_.max_new_tokens) {
      fwd = forward(n_ + cur - 1, 1);
      ev.forward([&] { return std::move(fwd); });
    }
    kv = kv_figures(cur);
    ev.kv([&] { return std::move(kv); });
    if (constraint_) ev.set("constraint", [&] { return std::move(cinfo); });
    rec_.step(cur, "expand", ev);
  }
  finish();
  res_.metrics.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec_, [&] { return hypotheses_json(res_.hypotheses); }, [&] { return res_.metrics.to_json(); }, res_.metrics.seconds,
                 nullptr, 0);
  return res_;
}

}  // namespace

DecodeResult batch_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                               TraceSink* trace, const DecodeOptions& opt, LogitsConstraint* constraint) {
  return BatchSearch(model, prompt, cfg, trace, opt, constraint).run();
}

}  // namespace triescope
