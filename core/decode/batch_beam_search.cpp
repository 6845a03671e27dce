#include "core/decode/batch_beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/common/error.h"
#include "core/decode/beam_budget.h"
#include "core/select/log_normaliser.h"
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

}  // namespace

DecodeResult batch_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                               TraceSink* trace, const DecodeOptions& opt, LogitsConstraint* constraint) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = model.vocab_size();
  const int32_t B = cfg.num_beams;
  const int32_t n = static_cast<int32_t>(prompt.size());
  TS_CHECK(!prompt.empty(), "batch beam search: prompt must hold at least one token");
  for (size_t i = 0; i < prompt.size(); ++i)
    TS_CHECK(prompt[i] >= 0 && prompt[i] < V, "batch beam search: prompt[" << i << "] = " << prompt[i]
                                                                           << " outside vocabulary [0, " << V << ")");
  TS_CHECK(2 * B <= V, "batch beam search: num_beams " << B << " needs vocabulary >= " << 2 * B);
  const int64_t bps = model.kv_shape().bytes_per_slot();
  // The prefill is the biggest pass: B x n rows over B regions of n + max_new_tokens slots.
  const double region = static_cast<double>(n) + cfg.max_new_tokens, rows0 = static_cast<double>(B) * n;
  beam_budget_check("batch beam search", cfg, n, bps, rows0 * B * region, rows0 * V);
  TS_CHECK(B * region <= kTraceMaxSlots, "batch beam search: beam.num_beams x (prompt + beam.max_new_tokens) = "
                                             << static_cast<int64_t>(B * region) << " slots, more than " << kTraceMaxSlots);
  const int32_t cap = n + cfg.max_new_tokens;  // slots per beam region
  DecodeResult res;
  DecodeMetrics& m = res.metrics;
  m.prompt_len = n;
  model.reset();
  TraceRecorder rec(trace, opt.keyframe_interval);
  if (rec.on()) {
    json config = {{"beam", cfg.to_json()}, {"prompt", prompt}};
    if (constraint) config["constraint"] = constraint->describe();
    rec.header("batch_beam_search", opt.backend, config, model.describe(), model.vocab_strings());
  }

  // input_ids: B copies of the prompt, then the generated tokens of each row.
  std::vector<std::vector<int32_t>> input_ids(static_cast<size_t>(B), prompt);
  std::vector<double> beam_scores(static_cast<size_t>(B), -1e9);
  beam_scores[0] = 0.0;  // HF: only the first copy is live at the start
  std::vector<int64_t> cstates(static_cast<size_t>(B), constraint ? constraint->initial_state() : 0);
  int32_t rows = B;  // rows in use (fewer only when a constraint leaves fewer beams)

  Logits logits;
  auto run = [&](int32_t first_pos, int32_t count) -> json {
    StepInput in;
    in.num_slots = B * cap;
    in.mask.reset(rows * count, in.num_slots);
    for (int32_t r = 0; r < rows; ++r)
      for (int32_t k = 0; k < count; ++k) {
        const int32_t pos = first_pos + k;
        in.tokens.push_back(input_ids[static_cast<size_t>(r)][static_cast<size_t>(pos)]);
        in.positions.push_back(pos);
        in.slots.push_back(r * cap + pos);
        for (int32_t c = 0; c <= pos; ++c) in.mask.set(r * count + k, r * cap + c);  // causal inside row r's region
      }
    model.forward(in, logits);
    ++m.model_calls;
    m.computed_tokens += static_cast<int64_t>(in.tokens.size());
    if (!trace) return json();
    return {{"positions", in.positions}, {"slots", in.slots}, {"mask", trace_mask(in.mask)}};
  };
  auto kv = [&](int32_t generated) {
    const int64_t used = int64_t{B} * (n + generated);
    m.peak_slots = std::max(m.peak_slots, used);
    return json{{"slots", used}, {"peak", m.peak_slots}, {"bytes", used * bps}, {"batch_slots", used},
                {"batch_bytes", used * bps}, {"live_beams", rows}};
  };

  json fwd = run(0, n);
  if (rec.on()) rec.step(0, "prefill", {{"forward", fwd}, {"kv", kv(0)}});
  else kv(0);
  std::vector<int32_t> last_row(static_cast<size_t>(B));
  for (int32_t r = 0; r < B; ++r) last_row[static_cast<size_t>(r)] = r * n + (n - 1);

  BeamHyps hyps{B, cfg.length_penalty, 1e9, {}};
  bool done = false;
  std::vector<double> scores;
  for (int32_t cur = 1; cur <= cfg.max_new_tokens; ++cur) {
    // next_token_scores = log_softmax(logits) (+ constraint mask) + beam_scores[:, None], flattened [rows * V]
    scores.assign(static_cast<size_t>(rows) * static_cast<size_t>(V), 0.0);
    json cinfo;
    if (constraint) cinfo = json::array();
    const std::vector<int64_t> row_states(cstates.begin(), cstates.begin() + rows);
    std::vector<const float*> row_logits;
    for (int32_t r = 0; r < rows; ++r) row_logits.push_back(logits.row(last_row[static_cast<size_t>(r)]));
    const size_t k = std::min<size_t>(static_cast<size_t>(2 * B), scores.size());
    std::vector<int64_t> idx;
    // A constraint that ranks sparsely scores only its allowed tokens (the
    // same finite candidates in the same order as the full ranking below).
    std::vector<ScoredCandidate> ranked;
    if (constraint && constraint->rank(row_states, cur - 1, row_logits, beam_scores.data(), V, static_cast<int32_t>(k), ranked, trace ? &cinfo : nullptr)) {
      for (const ScoredCandidate& c : ranked) {
        idx.push_back(c.flat);
        scores[static_cast<size_t>(c.flat)] = c.score;
      }
    } else {
      for (int32_t r = 0; r < rows; ++r) log_softmax_row(row_logits[static_cast<size_t>(r)], V, &scores[static_cast<size_t>(r) * V]);
      if (constraint) constraint->apply(row_states, cur - 1, scores.data(), V, trace ? &cinfo : nullptr);
      for (int32_t r = 0; r < rows; ++r)
        for (int32_t v = 0; v < V; ++v) scores[static_cast<size_t>(r) * V + static_cast<size_t>(v)] += beam_scores[static_cast<size_t>(r)];
      // torch.topk(scores, 2B), ties to the lower flat index.
      idx.resize(scores.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](int64_t a, int64_t c) {
        return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(c)] ||
               (scores[static_cast<size_t>(a)] == scores[static_cast<size_t>(c)] && a < c);
      });
      idx.resize(k);
    }

    std::vector<int32_t> next_tokens, next_indices;
    std::vector<double> next_scores;
    json chosen = json::array();
    for (size_t rank = 0; rank < idx.size(); ++rank) {
      const double sc = scores[static_cast<size_t>(idx[rank])];
      if (std::isinf(sc) || sc <= -1e8) continue;  // masked, or a not-yet-live copy
      const int32_t r = static_cast<int32_t>(idx[rank] / V), tok = static_cast<int32_t>(idx[rank] % V);
      if (tok == cfg.eos_token) {
        if (static_cast<int32_t>(rank) >= B) continue;
        std::vector<int32_t> gen(input_ids[static_cast<size_t>(r)].begin() + n, input_ids[static_cast<size_t>(r)].end());
        hyps.add(gen, sc, cur);
        continue;
      }
      next_tokens.push_back(tok);
      next_indices.push_back(r);
      next_scores.push_back(sc);
      if (trace) chosen.push_back({{"beam", next_tokens.size() - 1}, {"from_beam", r}, {"token", tok}, {"score", sc}});
      if (static_cast<int32_t>(next_tokens.size()) == B) break;
    }
    const double best = idx.empty() ? -INFINITY : scores[static_cast<size_t>(idx[0])];
    done = hyps.is_done(best, cur, cfg.early_stopping, cfg.max_new_tokens) || next_tokens.empty();

    // input_ids = cat(input_ids[beam_idx], next_tokens); cache reordered by beam_idx (one gather).
    const int32_t new_rows = static_cast<int32_t>(next_tokens.size());
    std::vector<std::vector<int32_t>> reordered;
    CompactionPlan plan;
    plan.old_num_slots = B * cap;
    plan.src.resize(static_cast<size_t>(B) * static_cast<size_t>(cap));
    for (int32_t j = 0; j < B; ++j)
      for (int32_t p = 0; p < cap; ++p)
        plan.src[static_cast<size_t>(j) * cap + static_cast<size_t>(p)] = (j < new_rows ? next_indices[static_cast<size_t>(j)] : j) * cap + p;
    const std::vector<int64_t> prev_cstates = cstates;  // rows are gathered: read the old states, not ones already overwritten
    for (int32_t j = 0; j < new_rows; ++j) {
      reordered.push_back(input_ids[static_cast<size_t>(next_indices[static_cast<size_t>(j)])]);
      reordered.back().push_back(next_tokens[static_cast<size_t>(j)]);
      beam_scores[static_cast<size_t>(j)] = next_scores[static_cast<size_t>(j)];
      if (constraint) cstates[static_cast<size_t>(j)] = constraint->next_state(prev_cstates[static_cast<size_t>(next_indices[static_cast<size_t>(j)])], next_tokens[static_cast<size_t>(j)], cur - 1);
    }
    model.compact(plan);
    for (int32_t j = new_rows; j < B; ++j) reordered.push_back(input_ids[static_cast<size_t>(j)]);
    input_ids = std::move(reordered);
    rows = std::max(new_rows, 0);
    m.steps = cur;

    json step_fwd;
    const bool feeds = !done && cur < cfg.max_new_tokens;
    if (feeds) {
      step_fwd = run(n + cur - 1, 1);
      for (int32_t r = 0; r < rows; ++r) last_row[static_cast<size_t>(r)] = r;
    }
    if (rec.on()) {
      json fields = {{"chosen", chosen}, {"kv", kv(cur)}};
      if (feeds) fields["forward"] = step_fwd;
      if (constraint) fields["constraint"] = cinfo;
      rec.step(cur, "expand", std::move(fields));
    } else {
      kv(cur);
    }
    if (done) break;
  }

  if (!done)
    for (int32_t r = 0; r < rows; ++r) {
      std::vector<int32_t> gen(input_ids[static_cast<size_t>(r)].begin() + n, input_ids[static_cast<size_t>(r)].end());
      hyps.add(gen, beam_scores[static_cast<size_t>(r)], static_cast<int32_t>(gen.size()));
    }
  std::vector<Hypothesis> sorted = hyps.beams;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Hypothesis& a, const Hypothesis& c) { return a.score < c.score; });
  res.hypotheses.assign(sorted.rbegin(), sorted.rend());

  m.final_slots = int64_t{B} * (n + m.steps);
  m.batch_peak_slots = m.peak_slots;
  m.peak_bytes = m.peak_slots * bps;
  m.batch_peak_bytes = m.peak_bytes;
  m.output_len = res.hypotheses.empty() ? 0 : static_cast<int32_t>(res.hypotheses.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n, m.output_len);
  m.batch_mem_per_token = m.mem_per_token;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) {
    json outs = json::array();
    for (auto& h : res.hypotheses) outs.push_back({{"tokens", h.tokens}, {"score", h.score}, {"sum_logprobs", h.sum_logprobs}});
    rec.summary(std::move(outs), m.to_json(), m.seconds);
  }
  return res;
}

}  // namespace triescope
