#include "core/decode/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/common/error.h"
#include "core/trace/trace_recorder.h"
#include "core/decode/trie_beam_search.h"

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

SamplingDecodeResult speculative_decode(Model& target, Model& draft, const std::vector<int32_t>& prompt,
                                        const SpeculativeConfig& cfg, TraceSink* trace, const DecodeOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = target.vocab_size();
  const int32_t n = static_cast<int32_t>(prompt.size());
  prompt_check(prompt, V, "speculative decoding");
  TS_CHECK(draft.vocab_size() == V, "speculative decoding: draft vocabulary " << draft.vocab_size() << " != target " << V);
  TS_CHECK(cfg.gamma >= 1, "speculative decoding: gamma must be >= 1, got " << cfg.gamma);
  TS_CHECK(cfg.max_new_tokens >= 1, "speculative decoding: max_new_tokens must be >= 1");
  TS_CHECK(!cfg.sampling.deterministic, "speculative decoding: sampling.deterministic is not supported");
  target.reset();
  draft.reset();
  TokenTree tree;
  KvSlots slots;
  TreeFeeder tf(target), df(draft);
  const PhiloxKey key{cfg.sampling.seed};
  SamplingDecodeResult res;
  DecodeMetrics& m = res.decode.metrics;
  m.prompt_len = n;
  const int64_t bps = target.kv_shape().bytes_per_slot();
  TraceRecorder rec(trace, opt.keyframe_interval);
  if (rec.on()) {
    json config = cfg.to_json();
    config["prompt"] = prompt;
    config["draft_model"] = draft.describe();
    rec.header("speculative", opt.backend, config, target.describe(), target.vocab_strings(), kVerifySpeculativeChain);
  }
  std::vector<double> tlp, dlp;
  std::vector<int32_t> trow, drow;
  const std::vector<int32_t> prompt_nodes = tree.add_chain(kNoNode, prompt);
  for (int32_t id : prompt_nodes) tree.node(id).slot = slots.allocate();
  int32_t step = 0;
  {
    // Prefill all but the last prompt token: that one is the first query of
    // the first draft and of the first verification.
    const std::vector<int32_t> pre(prompt_nodes.begin(), prompt_nodes.end() - 1);
    json fields = json::object();
    if (!pre.empty()) {
      fields["forward"] = tf.feed(tree, slots.num_slots(), pre, tlp, trow, rec.on());
      fields["draft_forward"] = df.feed(tree, slots.num_slots(), pre, dlp, drow, rec.on());
    }
    if (rec.on()) {
      json added = json::array();
      for (int32_t id : prompt_nodes) added.push_back(trace_node(tree.node(id)));
      fields["added"] = added;
      fields["kv"] = {{"slots", slots.num_slots()}, {"peak", slots.peak()}, {"bytes", slots.num_slots() * bps}};
      rec.step(0, "prefill", std::move(fields), tree, slots.num_slots());
    }
  }
  int32_t cur = prompt_nodes.back();
  double cur_lp = 0.0;
  int32_t generated = 0;
  int64_t iteration = 0;
  while (generated < cfg.max_new_tokens) {
    ++iteration;
    const auto it = static_cast<uint32_t>(iteration);
    const int32_t g = std::min(cfg.gamma, cfg.max_new_tokens - generated - 1);
    if (iteration > 1) {
      // Collect the rejected drafts of the last iteration: keep cur's ancestors.
      const CompactionPlan plan = kv_collect_garbage(tree, {cur}, slots.num_slots());
      target.compact(plan);
      draft.compact(plan);
      slots.apply(plan);
      ++m.gc_runs;
      rec.gc(step + 1, plan);
    }
    // Draft: g tokens, one draft forward each.
    std::vector<int32_t> chain = {cur};
    std::vector<std::vector<double>> q(static_cast<size_t>(g));
    json added = json::array(), dfw = json::array();
    for (int32_t j = 1; j <= g; ++j) {
      json f = df.feed(tree, slots.num_slots(), {chain.back()}, dlp, drow, rec.on());
      if (rec.on()) dfw.push_back(f);
      const int32_t r = drow[static_cast<size_t>(chain.back())];
      q[static_cast<size_t>(j - 1)] = beam_distribution({0.0}, std::vector<double>(dlp.begin() + static_cast<std::ptrdiff_t>(r) * V,
                                                                            dlp.begin() + static_cast<std::ptrdiff_t>(r + 1) * V),
                                                        V, cfg.sampling);
      const int32_t x = static_cast<int32_t>(sample_index(q[static_cast<size_t>(j - 1)],
                                                          philox_uniform(key, it, static_cast<uint32_t>(j), 0, 0, RandStream::draft_sample)));
      const int32_t id = tree.add_child(chain.back(), x, 0.0);
      tree.node(id).slot = slots.allocate();
      chain.push_back(id);
      if (rec.on()) added.push_back(trace_node(tree.node(id)));
    }
    ++step;
    if (rec.on())
      rec.step(step, "draft",
               {{"added", added}, {"draft_forwards", dfw},
                {"kv", {{"slots", slots.num_slots()}, {"peak", slots.peak()}, {"bytes", slots.num_slots() * bps}}}},
               tree, slots.num_slots());
    // Verify: the target scores cur and every draft in one pass.
    json fwd = tf.feed(tree, slots.num_slots(), chain, tlp, trow, rec.on());
    auto p_at = [&](int32_t node) {
      const int32_t r = trow[static_cast<size_t>(node)];
      return std::vector<double>(tlp.begin() + static_cast<std::ptrdiff_t>(r) * V, tlp.begin() + static_cast<std::ptrdiff_t>(r + 1) * V);
    };
    json status = json::array(), decisions = json::array();
    added = json::array();
    std::vector<std::vector<double>> lps, ps;  // [g + 1] target log-probs and warped p after cur and each draft
    std::vector<int32_t> tokens;
    for (int32_t j = 0; j <= g; ++j) {
      lps.push_back(p_at(chain[static_cast<size_t>(j)]));
      ps.push_back(beam_distribution({0.0}, lps.back(), V, cfg.sampling));
      if (j > 0) tokens.push_back(tree.node(chain[static_cast<size_t>(j)]).token);
    }
    const auto verifier = opt.verifiers.find<SpeculativeVerifier>(kVerifySpeculativeChain);
    const SpecChainResult vr = verifier ? verifier->verify_chain(ps, q, tokens, cfg.sampling.seed, it)
                                        : speculative_verify_chain(ps, q, tokens, cfg.sampling.seed, it);
    const int32_t accepted = vr.accepted;
    for (size_t i = 0; i < vr.tested.size(); ++i) {
      const int32_t j = static_cast<int32_t>(i) + 1;
      const int32_t node = chain[static_cast<size_t>(j)];
      const SpecDecision& d = vr.tested[i];
      if (rec.on()) decisions.push_back({{"layer", j}, {"node", node}, {"accept_prob", d.accept_prob}, {"u", d.u}, {"accepted", d.accepted}});
      if (d.accepted) {
        tree.node(node).status = NodeStatus::accepted;
        tree.node(node).logprob = cur_lp + lps[static_cast<size_t>(j - 1)][static_cast<size_t>(tokens[i])];
        cur_lp = tree.node(node).logprob;
        if (rec.on()) status.push_back({{"node", node}, {"status", "accepted"}});
        continue;
      }
      for (int32_t k = j; k <= g; ++k) {
        tree.node(chain[static_cast<size_t>(k)]).status = NodeStatus::rejected;
        if (rec.on()) status.push_back({{"node", chain[static_cast<size_t>(k)]}, {"status", "rejected"}});
      }
    }
    // The next token: from the residual under the rejected draft's parent, or
    // (every draft accepted) from p after the last draft.
    const int32_t parent = chain[static_cast<size_t>(accepted)];
    cur_lp += lps[static_cast<size_t>(accepted)][static_cast<size_t>(vr.next_token)];
    const int32_t next = tree.add_child(parent, vr.next_token, cur_lp);
    tree.node(next).slot = slots.allocate();
    if (rec.on()) added.push_back(trace_node(tree.node(next)));
    // Verification decisions made (a rejection ends the chain's tests), as DSBD counts them.
    res.sampling.layers_verified += static_cast<int64_t>(vr.tested.size());
    res.sampling.layers_accepted += accepted;
    generated += accepted + 1;
    cur = next;
    ++step;
    if (rec.on())
      rec.step(step, "verify",
               {{"added", added}, {"status", status}, {"forward", fwd},
                {"verify", {{"kind", kVerifySpeculativeChain}, {"iteration", iteration}, {"decisions", decisions}, {"accepted", accepted}, {"steps", accepted + 1}}},
                {"chosen", json::array({{{"beam", 0}, {"node", next}, {"score", cur_lp}}})},
                {"kv", {{"slots", slots.num_slots()}, {"peak", slots.peak()}, {"bytes", slots.num_slots() * bps}}}},
               tree, slots.num_slots());
  }
  Hypothesis h;
  h.tokens = tree.path_tokens(cur);
  h.tokens.erase(h.tokens.begin(), h.tokens.begin() + n);
  h.sum_logprobs = cur_lp;
  h.score = cur_lp / static_cast<double>(h.tokens.size());
  res.decode.hypotheses.push_back(h);
  res.sampling.iterations = iteration;
  res.sampling.target_calls = tf.calls;
  res.sampling.draft_calls = df.calls;
  res.sampling.target_tokens = tf.tokens;
  res.sampling.draft_tokens = df.tokens;
  res.sampling.log_likelihood = cur_lp;
  m.steps = step;
  m.model_calls = tf.calls;
  m.computed_tokens = tf.tokens;
  m.final_slots = slots.num_slots();
  m.peak_slots = slots.peak();
  m.peak_bytes = m.peak_slots * bps;
  m.output_len = static_cast<int32_t>(h.tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n, m.output_len);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) {
    json metrics = m.to_json();
    metrics["sampling"] = res.sampling.to_json();
    rec.summary(json::array({{{"tokens", h.tokens}, {"score", h.score}, {"sum_logprobs", h.sum_logprobs}}}), std::move(metrics), m.seconds,
                tree, slots.num_slots());
  }
  return res;
}

}  // namespace triescope
