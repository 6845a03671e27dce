#include "core/decode/sampling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "core/common/error.h"
#include "core/select/log_normaliser.h"
#include "core/decode/decoder_call.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/mask/ancestor_mask.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

SamplingConfig SamplingConfig::from_json(JsonObjectReader r) {
  SamplingConfig c;
  c.temperature = r.get_double("temperature", 1e-3, 1e3, 1.0);
  c.top_k = static_cast<int32_t>(r.get_int("top_k", 0, 1 << 30, 0));
  c.top_p = r.get_double("top_p", 1e-6, 1.0, 1.0);
  c.deterministic = r.get_bool("deterministic", false);
  c.seed = static_cast<uint64_t>(r.get_int("seed", 0, INT64_MAX, 0));
  r.finish();
  return c;
}

nlohmann::json SamplingConfig::to_json() const {
  return {{"temperature", temperature}, {"top_k", top_k}, {"top_p", top_p}, {"deterministic", deterministic}, {"seed", seed}};
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SamplingDecodeMetrics, target_calls, draft_calls, iterations, target_tokens, draft_tokens,
                                   layers_verified, layers_accepted, log_likelihood)
nlohmann::json SamplingDecodeMetrics::to_json() const { return *this; }

std::vector<double> warp_log_weights(const std::vector<double>& log_w, const SamplingConfig& warp) {
  TS_CHECK(warp.temperature > 0.0, "sampling: temperature must be > 0, got " << warp.temperature);
  const size_t n = log_w.size();
  double mx = -INFINITY;
  for (double l : log_w) mx = std::max(mx, l);
  TS_CHECK(std::isfinite(mx), "sampling: every pair has probability zero");
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = std::isfinite(log_w[i]) ? std::exp((log_w[i] - mx) / warp.temperature) : 0.0;
  const bool topk = warp.top_k > 0 && static_cast<size_t>(warp.top_k) < n;
  const bool topp = warp.top_p < 1.0;
  if (topk || topp) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    size_t keep = topk ? static_cast<size_t>(warp.top_k) : n;
    if (topp) {
      double total = 0.0;
      for (size_t i = 0; i < keep; ++i) total += p[order[i]];
      double acc = 0.0;
      size_t k = 0;
      while (k < keep) {  // smallest prefix whose mass reaches top_p of the (top-k) mass
        acc += p[order[k++]];
        if (acc >= warp.top_p * total) break;
      }
      keep = k;
    }
    for (size_t i = keep; i < n; ++i) p[order[i]] = 0.0;
  }
  double sum = 0.0;
  for (double x : p) sum += x;
  for (double& x : p) x /= sum;
  return p;
}

std::vector<double> beam_distribution(const std::vector<double>& beam_logprob, const std::vector<double>& token_logprob,
                                      int32_t vocab, const SamplingConfig& warp) {
  const size_t nb = beam_logprob.size();
  TS_CHECK(token_logprob.size() == nb * static_cast<size_t>(vocab),
           "beam distribution: token_logprob holds " << token_logprob.size() << " values, expected " << nb << " x " << vocab);
  std::vector<double> lw(token_logprob.size());
  for (size_t i = 0; i < nb; ++i)
    for (int32_t x = 0; x < vocab; ++x) lw[i * vocab + x] = beam_logprob[i] + token_logprob[i * vocab + x];  // Eq. 1 numerator
  return warp_log_weights(lw, warp);
}

int64_t sample_index(const std::vector<double>& prob, double u) {
  TS_CHECK(!prob.empty(), "sample_index: empty distribution");
  double total = 0.0;
  for (double x : prob) total += x;
  const double target = u * total;  // tolerate a sum a few ulps away from 1
  double acc = 0.0;
  int64_t last = -1;
  for (size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] <= 0.0) continue;
    acc += prob[i];
    last = static_cast<int64_t>(i);
    if (target < acc) return last;
  }
  TS_CHECK(last >= 0, "sample_index: distribution has no positive entry");
  return last;
}

std::vector<int64_t> top_indices(const std::vector<double>& prob, int32_t w) {
  std::vector<int64_t> idx(prob.size());
  std::iota(idx.begin(), idx.end(), int64_t{0});
  const size_t k = std::min(idx.size(), static_cast<size_t>(std::max(0, w)));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](int64_t a, int64_t b) { return prob[static_cast<size_t>(a)] > prob[static_cast<size_t>(b)] ||
                                                       (prob[static_cast<size_t>(a)] == prob[static_cast<size_t>(b)] && a < b); });
  idx.resize(k);
  return idx;
}

nlohmann::json TreeFeeder::feed(const TokenTree& tree, int32_t num_slots, const std::vector<int32_t>& nodes, bool want_trace) {
  if (written_.size() < static_cast<size_t>(tree.size())) written_.resize(static_cast<size_t>(tree.size()), 0);
  std::vector<char> queued(static_cast<size_t>(tree.size()), 0);
  std::vector<int32_t> missing;
  for (int32_t id : nodes) queued[static_cast<size_t>(id)] = 1;
  for (int32_t id : nodes)
    for (int32_t a = tree.node(id).parent; a != kNoNode && !written_[static_cast<size_t>(a)] && !queued[static_cast<size_t>(a)];
         a = tree.node(a).parent) {
      queued[static_cast<size_t>(a)] = 1;
      missing.push_back(a);
    }
  std::sort(missing.begin(), missing.end());  // ids grow with creation: parents first
  std::vector<int32_t> q = missing;
  q.insert(q.end(), nodes.begin(), nodes.end());
  StepInput in;
  for (int32_t id : q) {
    const TreeNode& nd = tree.node(id);
    TS_CHECK(nd.slot != kNoSlot, "tree feeder: node " << id << " has no KV slot");
    in.tokens.push_back(nd.token);
    in.positions.push_back(nd.depth);
    in.slots.push_back(nd.slot);
  }
  in.num_slots = num_slots;
  in.mask = ancestor_mask_build(tree, q, num_slots);
  model_.forward(in, logits_);
  ++calls;
  tokens += static_cast<int64_t>(q.size());
  const int32_t V = logits_.vocab;
  logprob_.resize(q.size() * static_cast<size_t>(V));
  row_of_.assign(static_cast<size_t>(tree.size()), -1);
  std::vector<const float*> rows;
  for (size_t r = 0; r < q.size(); ++r) rows.push_back(logits_.row(static_cast<int32_t>(r)));
  log_softmax_rows(rows, V, logprob_.data());
  for (size_t r = 0; r < q.size(); ++r) {
    row_of_[static_cast<size_t>(q[r])] = static_cast<int32_t>(r);
    written_[static_cast<size_t>(q[r])] = 1;
  }
  if (!want_trace) return nlohmann::json();
  return ForwardView{q, in.positions, in.slots, in.mask}.to_json();
}

const double* TreeFeeder::row(int32_t node) const {
  if (node < 0 || node >= static_cast<int32_t>(row_of_.size()) || row_of_[static_cast<size_t>(node)] < 0) return nullptr;
  return logprob_.data() + static_cast<std::ptrdiff_t>(row_of_[static_cast<size_t>(node)]) * logits_.vocab;
}

void feed_prefill(TreeFeeder& target, TreeFeeder& draft, const TokenTree& tree, int32_t num_slots, const std::vector<int32_t>& nodes,
                  StepRecord& ev) {
  if (nodes.empty()) return;
  json fwd = target.feed(tree, num_slots, nodes, ev.on());
  json dfwd = draft.feed(tree, num_slots, nodes, ev.on());
  ev.forward([&] { return std::move(fwd); });
  ev.draft_forward([&] { return std::move(dfwd); });
}

nlohmann::json SamplingDecodeResult::summary_metrics() const {
  nlohmann::json j = decode.metrics.to_json();
  j["sampling"] = sampling.to_json();
  return j;
}

void feeder_counts(const TreeFeeder& target, const TreeFeeder& draft, SamplingDecodeMetrics& s, DecodeMetrics& m) {
  s.target_calls = target.calls;
  s.draft_calls = draft.calls;
  s.target_tokens = target.tokens;
  s.draft_tokens = draft.tokens;
  m.model_calls = target.calls;
  m.computed_tokens = target.tokens;
}

namespace {

// Beam sampling (DSBD paper Eq. 1): each step draws W (beam, token) pairs
// from the warped joint distribution over every beam's continuations, on one
// token tree; equal draws share a node.
class BeamSampler : DecoderCall<BeamConfig> {
 public:
  BeamSampler(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg, const SamplingConfig& sampling, TraceSink* trace,
              const DecodeOptions& opt)
      : DecoderCall(model, prompt, cfg, trace, opt), sampling_(sampling), W_(cfg.num_beams), bps_(model.kv_shape().bytes_per_slot()),
        feeder_(model), key_{sampling.seed} {}

  SamplingDecodeResult run();

 private:
  struct Beam {
    int32_t node;
    double lp;
  };

  void prefill();
  std::vector<double> distribution();  // Eq. 1 over every (beam, token)
  std::vector<int64_t> draw(int32_t step, const std::vector<double>& prob) const;
  void prune(const std::vector<int64_t>& picks, StepRecord& ev);
  void collect_garbage(int32_t step, const std::vector<int64_t>& picks);
  std::vector<int32_t> grow(const std::vector<int64_t>& picks, const std::vector<double>& prob, StepRecord& ev);
  KvRecord kv_figures(int32_t step, int32_t live);
  void finish();

  const SamplingConfig& sampling_;
  const int32_t W_;
  const int64_t bps_;
  TokenTree tree_;
  KvSlots slots_;
  TreeFeeder feeder_;
  const PhiloxKey key_;
  SamplingDecodeResult res_;
  std::vector<Beam> beams_;
  std::vector<double> token_lp_;  // [beams * V] each beam's continuation log-probs
};

// The batch layout holds W rows from the prefill on (every beam a copy of
// the prompt), as trie beam search counts it.
KvRecord BeamSampler::kv_figures(int32_t step, int32_t live) {
  const int64_t batch = batch_baseline_slots(W_, n_, step);
  DecodeMetrics& m = res_.decode.metrics;
  m.batch_peak_slots = std::max(m.batch_peak_slots, batch);
  return {.slots = slots_.num_slots(), .peak = slots_.peak(), .bytes = slots_.num_slots() * bps_,
          .batch_slots = batch, .batch_bytes = batch * bps_, .live_beams = live};
}

void BeamSampler::prefill() {
  const std::vector<int32_t> prompt_nodes = tree_.add_chain(kNoNode, prompt_);
  for (int32_t id : prompt_nodes) tree_.node(id).slot = slots_.allocate();
  json fwd = feeder_.feed(tree_, slots_.num_slots(), prompt_nodes, rec_.on());
  KvRecord kv = kv_figures(0, 1);
  StepRecord ev(rec_);
  ev.added(tree_, prompt_nodes);
  ev.forward([&] { return std::move(fwd); });
  ev.kv([&] { return std::move(kv); });
  rec_.step(0, "prefill", ev, tree_, slots_.num_slots());
  beams_ = {{prompt_nodes.back(), 0.0}};
}

std::vector<double> BeamSampler::distribution() {
  const size_t nb = beams_.size();
  std::vector<double> beam_lp(nb);
  token_lp_.resize(nb * static_cast<size_t>(V_));
  for (size_t i = 0; i < nb; ++i) {
    beam_lp[i] = beams_[i].lp;
    const double* row = feeder_.row(beams_[i].node);
    TS_CHECK(row != nullptr, "beam sampling: beam node " << beams_[i].node << " was not scored");
    std::copy_n(row, V_, token_lp_.data() + i * V_);
  }
  return beam_distribution(beam_lp, token_lp_, V_, sampling_);  // Eq. 1
}

std::vector<int64_t> BeamSampler::draw(int32_t step, const std::vector<double>& prob) const {
  if (sampling_.deterministic) return top_indices(prob, W_);
  std::vector<int64_t> picks;
  for (int32_t i = 0; i < W_; ++i)
    picks.push_back(sample_index(prob, philox_uniform(key_, static_cast<uint32_t>(step), 0, 0, static_cast<uint32_t>(i), RandStream::target_sample)));
  return picks;
}

// Beams no pick continues are pruned; the prompt is never pruned, and a beam
// drawn again lives on.
void BeamSampler::prune(const std::vector<int64_t>& picks, StepRecord& ev) {
  std::vector<int32_t> kept_parents;
  for (int64_t pk : picks) kept_parents.push_back(beams_[static_cast<size_t>(pk / V_)].node);
  for (const Beam& b : beams_) {
    if (tree_.node(b.node).depth < n_ || tree_.node(b.node).status != NodeStatus::live ||
        std::find(kept_parents.begin(), kept_parents.end(), b.node) != kept_parents.end())
      continue;
    ev.pruned(tree_.prune_upwards(b.node, n_));
  }
}

void BeamSampler::collect_garbage(int32_t step, const std::vector<int64_t>& picks) {
  std::vector<int32_t> live;
  for (int64_t pk : picks) live.push_back(beams_[static_cast<size_t>(pk / V_)].node);
  const CompactionPlan plan = kv_collect_garbage(tree_, live, slots_.num_slots());
  model_.compact(plan);
  slots_.apply(plan);
  ++res_.decode.metrics.gc_runs;
  rec_.gc(step, plan);
}

// A node per distinct (parent, token) drawn; returns the new nodes.
std::vector<int32_t> BeamSampler::grow(const std::vector<int64_t>& picks, const std::vector<double>& prob, StepRecord& ev) {
  std::map<std::pair<int32_t, int32_t>, int32_t> made;  // (parent node, token) -> node: equal beams share a node
  std::vector<Beam> next;
  std::vector<int32_t> new_nodes;
  for (size_t k = 0; k < picks.size(); ++k) {
    const size_t bi = static_cast<size_t>(picks[k] / V_);
    const int32_t tok = static_cast<int32_t>(picks[k] % V_);
    const double l = beams_[bi].lp + token_lp_[bi * V_ + static_cast<size_t>(tok)];
    auto [it, fresh] = made.try_emplace({beams_[bi].node, tok}, -1);
    if (fresh) {
      it->second = tree_.add_child(beams_[bi].node, tok, l);
      tree_.node(it->second).slot = slots_.allocate();
      new_nodes.push_back(it->second);
      ev.added(tree_, it->second);
    }
    const int32_t node = it->second;  // a local: lambdas cannot capture structured bindings before clang 16
    next.push_back({node, l});
    ev.push("chosen", [&] {
      return json{{"beam", k}, {"from_beam", bi}, {"node", node}, {"token", tok}, {"score", l}, {"prob", prob[static_cast<size_t>(picks[k])]}};
    });
  }
  beams_ = std::move(next);
  return new_nodes;
}

// Hypotheses: the distinct final beams, highest target log-likelihood first.
void BeamSampler::finish() {
  std::vector<Beam> fin = beams_;
  std::stable_sort(fin.begin(), fin.end(), [](const Beam& a, const Beam& b) { return a.lp > b.lp; });
  std::vector<int32_t> seen;
  std::vector<Hypothesis>& hyps = res_.decode.hypotheses;
  for (const Beam& b : fin) {
    if (std::find(seen.begin(), seen.end(), b.node) != seen.end()) continue;
    seen.push_back(b.node);
    Hypothesis h;
    h.tokens = tree_.path_tokens(b.node);
    h.tokens.erase(h.tokens.begin(), h.tokens.begin() + n_);
    h.sum_logprobs = b.lp;
    h.score = h.tokens.empty() ? 0.0 : b.lp / static_cast<double>(h.tokens.size());
    hyps.push_back(std::move(h));
  }
  DecodeMetrics& m = res_.decode.metrics;
  m.model_calls = feeder_.calls;
  m.computed_tokens = feeder_.tokens;
  m.final_slots = slots_.num_slots();
  m.peak_slots = slots_.peak();
  m.peak_bytes = m.peak_slots * bps_;
  m.batch_peak_bytes = m.batch_peak_slots * bps_;
  m.output_len = hyps.empty() ? 0 : static_cast<int32_t>(hyps.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n_, m.output_len);
  m.batch_mem_per_token = mem_per_token(m.batch_peak_bytes, n_, m.output_len);
  res_.sampling.target_calls = feeder_.calls;
  res_.sampling.target_tokens = feeder_.tokens;
  res_.sampling.log_likelihood = hyps.empty() ? 0.0 : hyps.front().sum_logprobs;
}

SamplingDecodeResult BeamSampler::run() {
  const auto t0 = std::chrono::steady_clock::now();
  prompt_check(prompt_, V_, "beam sampling");
  TS_CHECK(W_ >= 1, "beam sampling: num_beams must be >= 1, got " << W_);
  TS_CHECK(cfg_.eos_token < 0, "beam sampling: eos_token is not supported (runs max_new_tokens steps), got " << cfg_.eos_token);
  model_.reset();
  DecodeMetrics& m = res_.decode.metrics;
  m.prompt_len = n_;
  record_header(rec_, beam_sampling_spec(), opt_, model_,
                [&] { return json{{"beam", cfg_.to_json()}, {"sampling", sampling_.to_json()}, {"prompt", prompt_}}; });
  prefill();
  for (int32_t step = 1; step <= cfg_.max_new_tokens; ++step) {
    const std::vector<double> prob = distribution();
    const std::vector<int64_t> picks = draw(step, prob);
    const bool feeds = step < cfg_.max_new_tokens;
    StepRecord ev(rec_, {"added", "status", "chosen"});
    prune(picks, ev);
    if (feeds && cfg_.gc_interval > 0 && step % cfg_.gc_interval == 0) collect_garbage(step, picks);
    const std::vector<int32_t> new_nodes = grow(picks, prob, ev);
    m.steps = step;
    if (feeds) {
      json fwd = feeder_.feed(tree_, slots_.num_slots(), new_nodes, rec_.on());
      ev.forward([&] { return std::move(fwd); });
    }
    KvRecord kv = kv_figures(step, static_cast<int32_t>(beams_.size()));
    ev.kv([&] { return std::move(kv); });
    rec_.step(step, "sample", ev, tree_, slots_.num_slots());
  }
  finish();
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec_, [&] { return hypotheses_json(res_.decode.hypotheses); }, [&] { return res_.summary_metrics(); }, m.seconds, &tree_,
                 slots_.num_slots());
  return res_;
}

}  // namespace

SamplingDecodeResult beam_sampling(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                                   const SamplingConfig& sampling, TraceSink* trace, const DecodeOptions& opt) {
  return BeamSampler(model, prompt, cfg, sampling, trace, opt).run();
}

}  // namespace triescope
