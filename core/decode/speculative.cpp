#include "core/decode/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/common/error.h"
#include "core/decode/decoder_call.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/trace/speculative_chain_verify_record.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

nlohmann::json SpeculativeConfig::to_json() const {
  return {{"gamma", gamma}, {"max_new_tokens", max_new_tokens}, {"sampling", sampling.to_json()}};
}

SpecChainResult speculative_verify_chain(const std::vector<std::vector<double>>& p, const std::vector<std::vector<double>>& q,
                                         const std::vector<int32_t>& tokens, uint64_t seed, uint32_t iteration) {
  const auto g = static_cast<int32_t>(tokens.size());
  TS_CHECK(q.size() == tokens.size() && p.size() == tokens.size() + 1,
           "speculative verify: need g + 1 target rows and g draft rows, got " << p.size() << " and " << q.size() << " for g = " << g);
  const PhiloxKey key{seed};
  SpecChainResult r;
  for (int32_t j = 1; j <= g; ++j) {
    const std::vector<double>& pj = p[static_cast<size_t>(j - 1)];
    const std::vector<double>& qj = q[static_cast<size_t>(j - 1)];
    const auto x = static_cast<size_t>(tokens[static_cast<size_t>(j - 1)]);
    TS_CHECK(x < pj.size(), "speculative verify: draft token " << x << " outside the vocabulary of " << pj.size());
    SpecDecision d;
    d.accept_prob = std::min(1.0, pj[x] / qj[x]);
    d.u = philox_uniform(key, iteration, static_cast<uint32_t>(j), 0, 0, RandStream::verify_accept);
    d.accepted = d.u < d.accept_prob;
    r.tested.push_back(d);
    if (d.accepted) {
      ++r.accepted;
      continue;
    }
    std::vector<double> resid(pj.size());
    double mass = 0.0;
    for (size_t v = 0; v < pj.size(); ++v) mass += resid[v] = std::max(0.0, pj[v] - qj[v]);
    TS_CHECK(mass > 0.0, "speculative decoding: empty residual after a rejection");
    r.next_token = static_cast<int32_t>(sample_index(resid, philox_uniform(key, iteration, static_cast<uint32_t>(j), 0, 0, RandStream::residual_sample)));
    r.from_residual = true;
    return r;
  }
  // every draft accepted: one more token from p
  r.next_token = static_cast<int32_t>(sample_index(p.back(), philox_uniform(key, iteration, static_cast<uint32_t>(g + 1), 0, 0, RandStream::target_sample)));
  return r;
}

namespace {

// One speculative decode: per iteration a draft chain of g tokens (one draft
// pass each), then one target pass over cur and the chain, and the chain
// verified (speculative_verify_chain or the installed verifier).
class SpeculativeSearch : DecoderCall<SpeculativeConfig> {
 public:
  SpeculativeSearch(Model& target, Model& draft, const std::vector<int32_t>& prompt, const SpeculativeConfig& cfg, TraceSink* trace,
                    const DecodeOptions& opt)
      : DecoderCall(target, prompt, cfg, trace, opt), draft_(draft), bps_(target.kv_shape().bytes_per_slot()), tf_(target), df_(draft),
        key_{cfg.sampling.seed} {}

  SamplingDecodeResult run();

 private:
  void check() const;
  void prefill();
  void collect_garbage();
  // Draws g tokens under cur; q: [g] the distributions they were drawn from.
  std::vector<int32_t> draft_chain(int32_t g, std::vector<std::vector<double>>& q);
  void verify_chain(const std::vector<int32_t>& chain, const std::vector<std::vector<double>>& q);
  KvRecord kv_figures() const { return {.slots = slots_.num_slots(), .peak = slots_.peak(), .bytes = slots_.num_slots() * bps_}; }
  void finish();

  Model& draft_;  // the target is model_
  const int64_t bps_;
  TokenTree tree_;
  KvSlots slots_;
  TreeFeeder tf_, df_;
  const PhiloxKey key_;
  SamplingDecodeResult res_;
  int32_t step_ = 0;
  int32_t cur_ = kNoNode;  // the last accepted node
  double cur_lp_ = 0.0;    // its target log-likelihood
  int32_t generated_ = 0;
  int64_t iteration_ = 0;
};

void SpeculativeSearch::check() const {
  prompt_check(prompt_, V_, "speculative decoding");
  TS_CHECK(draft_.vocab_size() == V_, "speculative decoding: draft vocabulary " << draft_.vocab_size() << " != target " << V_);
  TS_CHECK(cfg_.gamma >= 1, "speculative decoding: gamma must be >= 1, got " << cfg_.gamma);
  TS_CHECK(cfg_.max_new_tokens >= 1, "speculative decoding: max_new_tokens must be >= 1");
  TS_CHECK(!cfg_.sampling.deterministic, "speculative decoding: sampling.deterministic is not supported");
}

// All but the last prompt token: that one is the first query of the first
// draft and of the first verification.
void SpeculativeSearch::prefill() {
  const std::vector<int32_t> prompt_nodes = tree_.add_chain(kNoNode, prompt_);
  for (int32_t id : prompt_nodes) tree_.node(id).slot = slots_.allocate();
  const std::vector<int32_t> pre(prompt_nodes.begin(), prompt_nodes.end() - 1);
  StepRecord ev(rec_);
  feed_prefill(tf_, df_, tree_, slots_.num_slots(), pre, ev);
  ev.added(tree_, prompt_nodes);
  ev.kv([&] { return kv_figures(); });
  rec_.step(0, "prefill", ev, tree_, slots_.num_slots());
  cur_ = prompt_nodes.back();
}

// The rejected drafts of the last iteration: keep cur's ancestors.
void SpeculativeSearch::collect_garbage() {
  const CompactionPlan plan = kv_collect_garbage(tree_, {cur_}, slots_.num_slots());
  model_.compact(plan);
  draft_.compact(plan);
  slots_.apply(plan);
  ++res_.decode.metrics.gc_runs;
  rec_.gc(step_ + 1, plan);
}

std::vector<int32_t> SpeculativeSearch::draft_chain(int32_t g, std::vector<std::vector<double>>& q) {
  const auto it = static_cast<uint32_t>(iteration_);
  std::vector<int32_t> chain = {cur_};
  q.assign(static_cast<size_t>(g), {});
  StepRecord ev(rec_, {"added", kDraftForwardsField});
  for (int32_t j = 1; j <= g; ++j) {
    json f = df_.feed(tree_, slots_.num_slots(), {chain.back()}, rec_.on());
    ev.draft_forwards_push([&] { return std::move(f); });
    const double* row = df_.row(chain.back());
    q[static_cast<size_t>(j - 1)] = beam_distribution({0.0}, std::vector<double>(row, row + V_), V_, cfg_.sampling);
    const int32_t x = static_cast<int32_t>(sample_index(q[static_cast<size_t>(j - 1)],
                                                        philox_uniform(key_, it, static_cast<uint32_t>(j), 0, 0, RandStream::draft_sample)));
    const int32_t id = tree_.add_child(chain.back(), x, 0.0);
    tree_.node(id).slot = slots_.allocate();
    chain.push_back(id);
    ev.added(tree_, id);
  }
  ev.kv([&] { return kv_figures(); });
  rec_.step(++step_, "draft", ev, tree_, slots_.num_slots());
  return chain;
}

// The target scores cur and every draft in one pass; the accepted drafts and
// the next token (from the residual under the rejected draft's parent, or
// from p after the last draft) extend cur.
void SpeculativeSearch::verify_chain(const std::vector<int32_t>& chain, const std::vector<std::vector<double>>& q) {
  const auto it = static_cast<uint32_t>(iteration_);
  const int32_t g = static_cast<int32_t>(q.size());
  StepRecord ev(rec_, {"status"});
  json fwd = tf_.feed(tree_, slots_.num_slots(), chain, rec_.on());
  std::vector<std::vector<double>> lps, ps;  // [g + 1] target log-probs and warped p after cur and each draft
  std::vector<int32_t> tokens;
  for (int32_t j = 0; j <= g; ++j) {
    const double* row = tf_.row(chain[static_cast<size_t>(j)]);
    lps.emplace_back(row, row + V_);
    ps.push_back(beam_distribution({0.0}, lps.back(), V_, cfg_.sampling));
    if (j > 0) tokens.push_back(tree_.node(chain[static_cast<size_t>(j)]).token);
  }
  const auto verifier = opt_.verifiers.find<SpeculativeVerifier>(kVerifySpeculativeChain);
  const SpecChainResult vr = verifier ? verifier->verify_chain(ps, q, tokens, cfg_.sampling.seed, it)
                                      : speculative_verify_chain(ps, q, tokens, cfg_.sampling.seed, it);
  const int32_t accepted = vr.accepted;
  for (size_t i = 0; i < vr.tested.size(); ++i) {
    const int32_t j = static_cast<int32_t>(i) + 1;
    const int32_t node = chain[static_cast<size_t>(j)];
    if (vr.tested[i].accepted) {
      tree_.node(node).status = NodeStatus::accepted;
      tree_.node(node).logprob = cur_lp_ + lps[static_cast<size_t>(j - 1)][static_cast<size_t>(tokens[i])];
      cur_lp_ = tree_.node(node).logprob;
      ev.status(node, NodeStatus::accepted);
      continue;
    }
    for (int32_t k = j; k <= g; ++k) {
      tree_.node(chain[static_cast<size_t>(k)]).status = NodeStatus::rejected;
      ev.status(chain[static_cast<size_t>(k)], NodeStatus::rejected);
    }
  }
  cur_lp_ += lps[static_cast<size_t>(accepted)][static_cast<size_t>(vr.next_token)];
  const int32_t next = tree_.add_child(chain[static_cast<size_t>(accepted)], vr.next_token, cur_lp_);
  tree_.node(next).slot = slots_.allocate();
  ev.added(tree_, next);
  // Verification decisions made (a rejection ends the chain's tests), as DSBD counts them.
  res_.sampling.layers_verified += static_cast<int64_t>(vr.tested.size());
  res_.sampling.layers_accepted += accepted;
  generated_ += accepted + 1;
  cur_ = next;
  ev.forward([&] { return std::move(fwd); });
  ev.verify([&] {
    SpeculativeChainVerify v{.iteration = iteration_, .decisions = {}, .accepted = accepted, .steps = accepted + 1};
    for (size_t i = 0; i < vr.tested.size(); ++i) {
      const SpecDecision& d = vr.tested[i];
      v.decisions.push_back({static_cast<int32_t>(i) + 1, chain[i + 1], d.accept_prob, d.u, d.accepted});
    }
    return v.to_json();
  });
  ev.set("chosen", [&] { return json::array({{{"beam", 0}, {"node", next}, {"score", cur_lp_}}}); });
  ev.kv([&] { return kv_figures(); });
  rec_.step(++step_, "verify", ev, tree_, slots_.num_slots());
}

void SpeculativeSearch::finish() {
  Hypothesis h;
  h.tokens = tree_.path_tokens(cur_);
  h.tokens.erase(h.tokens.begin(), h.tokens.begin() + n_);
  h.sum_logprobs = cur_lp_;
  h.score = cur_lp_ / static_cast<double>(h.tokens.size());
  res_.decode.hypotheses.push_back(h);
  DecodeMetrics& m = res_.decode.metrics;
  res_.sampling.iterations = iteration_;
  res_.sampling.log_likelihood = cur_lp_;
  feeder_counts(tf_, df_, res_.sampling, m);
  m.steps = step_;
  m.final_slots = slots_.num_slots();
  m.peak_slots = slots_.peak();
  m.peak_bytes = m.peak_slots * bps_;
  m.output_len = static_cast<int32_t>(h.tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n_, m.output_len);
}

SamplingDecodeResult SpeculativeSearch::run() {
  const auto t0 = std::chrono::steady_clock::now();
  check();
  model_.reset();
  draft_.reset();
  res_.decode.metrics.prompt_len = n_;
  record_header(rec_, speculative_spec(), opt_, model_, [&] { return drafting_config(cfg_.to_json(), prompt_, draft_); });
  prefill();
  while (generated_ < cfg_.max_new_tokens) {
    ++iteration_;
    const int32_t g = std::min(cfg_.gamma, cfg_.max_new_tokens - generated_ - 1);
    if (iteration_ > 1) collect_garbage();
    std::vector<std::vector<double>> q;
    const std::vector<int32_t> chain = draft_chain(g, q);
    verify_chain(chain, q);
  }
  finish();
  DecodeMetrics& m = res_.decode.metrics;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec_, [&] { return hypotheses_json(res_.decode.hypotheses); }, [&] { return res_.summary_metrics(); }, m.seconds, &tree_,
                 slots_.num_slots());
  return res_;
}

}  // namespace

SamplingDecodeResult speculative_decode(Model& target, Model& draft, const std::vector<int32_t>& prompt,
                                        const SpeculativeConfig& cfg, TraceSink* trace, const DecodeOptions& opt) {
  return SpeculativeSearch(target, draft, prompt, cfg, trace, opt).run();
}

}  // namespace triescope
