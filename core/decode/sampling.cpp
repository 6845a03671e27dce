#include "core/decode/sampling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "core/common/error.h"
#include "core/select/log_normaliser.h"
#include "core/trace/trace_recorder.h"
#include "core/decode/trie_beam_search.h"
#include "core/mask/ancestor_mask.h"

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

nlohmann::json SamplingDecodeMetrics::to_json() const {
  return {{"target_calls", target_calls},       {"draft_calls", draft_calls},         {"iterations", iterations},
          {"target_tokens", target_tokens},     {"draft_tokens", draft_tokens},
          {"layers_verified", layers_verified}, {"layers_accepted", layers_accepted}, {"log_likelihood", log_likelihood}};
}

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

nlohmann::json TreeFeeder::feed(const TokenTree& tree, int32_t num_slots, const std::vector<int32_t>& nodes,
                                std::vector<double>& logprob, std::vector<int32_t>& row_of, bool want_trace) {
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
  logprob.resize(q.size() * static_cast<size_t>(V));
  row_of.assign(static_cast<size_t>(tree.size()), -1);
  for (size_t r = 0; r < q.size(); ++r) {
    log_softmax_row(logits_.row(static_cast<int32_t>(r)), V, logprob.data() + r * static_cast<size_t>(V));
    row_of[static_cast<size_t>(q[r])] = static_cast<int32_t>(r);
    written_[static_cast<size_t>(q[r])] = 1;
  }
  if (!want_trace) return nlohmann::json();
  return {{"queries", q}, {"positions", in.positions}, {"slots", in.slots}, {"mask", trace_mask(in.mask)}};
}

SamplingDecodeResult beam_sampling(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                                   const SamplingConfig& sampling, TraceSink* trace, const DecodeOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = model.vocab_size();
  const int32_t W = cfg.num_beams;
  const int32_t n = static_cast<int32_t>(prompt.size());
  prompt_check(prompt, V, "beam sampling");
  TS_CHECK(W >= 1, "beam sampling: num_beams must be >= 1, got " << W);
  TS_CHECK(cfg.eos_token < 0, "beam sampling: eos_token is not supported (runs max_new_tokens steps), got " << cfg.eos_token);
  model.reset();
  TokenTree tree;
  KvSlots slots;
  TreeFeeder feeder(model);
  const PhiloxKey key{sampling.seed};
  SamplingDecodeResult res;
  DecodeMetrics& m = res.decode.metrics;
  m.prompt_len = n;
  const int64_t bps = model.kv_shape().bytes_per_slot();
  TraceRecorder rec(trace, opt.keyframe_interval);
  if (rec.on()) {
    json config = {{"beam", cfg.to_json()}, {"sampling", sampling.to_json()}, {"prompt", prompt}};
    rec.header("beam_sampling", opt.backend, config, model.describe(), model.vocab_strings());
  }
  std::vector<double> lp;
  std::vector<int32_t> row_of;
  const std::vector<int32_t> prompt_nodes = tree.add_chain(kNoNode, prompt);
  for (int32_t id : prompt_nodes) tree.node(id).slot = slots.allocate();
  json fwd = feeder.feed(tree, slots.num_slots(), prompt_nodes, lp, row_of, rec.on());
  auto kv_json = [&](int32_t step, int32_t live) {
    // The batch layout holds W rows from the prefill on (every beam a copy of
    // the prompt), as trie beam search counts it.
    const int64_t batch = batch_baseline_slots(W, n, step);
    m.batch_peak_slots = std::max(m.batch_peak_slots, batch);
    return json{{"slots", slots.num_slots()}, {"peak", slots.peak()}, {"bytes", slots.num_slots() * bps},
                {"batch_slots", batch},       {"batch_bytes", batch * bps}, {"live_beams", live}};
  };
  if (rec.on()) {
    json added = json::array();
    for (int32_t id : prompt_nodes) added.push_back(trace_node(tree.node(id)));
    rec.step(0, "prefill", {{"added", added}, {"forward", fwd}, {"kv", kv_json(0, 1)}}, tree, slots.num_slots());
  } else {
    kv_json(0, 1);
  }
  struct Beam { int32_t node; double lp; };
  std::vector<Beam> beams = {{prompt_nodes.back(), 0.0}};
  std::vector<double> beam_lp, token_lp;
  for (int32_t step = 1; step <= cfg.max_new_tokens; ++step) {
    const size_t nb = beams.size();
    beam_lp.resize(nb);
    token_lp.resize(nb * static_cast<size_t>(V));
    for (size_t i = 0; i < nb; ++i) {
      beam_lp[i] = beams[i].lp;
      const int32_t r = row_of[static_cast<size_t>(beams[i].node)];
      TS_CHECK(r >= 0, "beam sampling: beam node " << beams[i].node << " was not scored");
      std::copy_n(lp.data() + static_cast<size_t>(r) * V, V, token_lp.data() + i * V);
    }
    const std::vector<double> prob = beam_distribution(beam_lp, token_lp, V, sampling);  // Eq. 1
    std::vector<int64_t> picks;
    if (sampling.deterministic) {
      picks = top_indices(prob, W);
    } else {
      for (int32_t i = 0; i < W; ++i)
        picks.push_back(sample_index(prob, philox_uniform(key, static_cast<uint32_t>(step), 0, 0, static_cast<uint32_t>(i),
                                                          RandStream::target_sample)));
    }
    const bool feeds = step < cfg.max_new_tokens;
    std::vector<int32_t> kept_parents;
    for (int64_t pk : picks) kept_parents.push_back(beams[static_cast<size_t>(pk / V)].node);
    json status = json::array(), added = json::array(), chosen = json::array();
    for (size_t i = 0; i < nb; ++i) {
      const int32_t node = beams[i].node;
      if (tree.node(node).depth < n || tree.node(node).status != NodeStatus::live ||
          std::find(kept_parents.begin(), kept_parents.end(), node) != kept_parents.end())
        continue;  // the prompt is never pruned; a beam drawn again lives on
      for (int32_t id : tree.prune_upwards(node, n))
        if (rec.on()) status.push_back({{"node", id}, {"status", "pruned"}});
    }
    if (feeds && cfg.gc_interval > 0 && step % cfg.gc_interval == 0) {
      std::vector<int32_t> live;
      for (int64_t pk : picks) live.push_back(beams[static_cast<size_t>(pk / V)].node);
      const CompactionPlan plan = kv_collect_garbage(tree, live, slots.num_slots());
      model.compact(plan);
      slots.apply(plan);
      ++m.gc_runs;
      rec.gc(step, plan);
    }
    std::map<std::pair<int32_t, int32_t>, int32_t> made;  // (parent node, token) -> node: equal beams share a node
    std::vector<Beam> next;
    std::vector<int32_t> new_nodes;
    for (size_t k = 0; k < picks.size(); ++k) {
      const size_t bi = static_cast<size_t>(picks[k] / V);
      const int32_t tok = static_cast<int32_t>(picks[k] % V);
      const double l = beams[bi].lp + token_lp[bi * V + static_cast<size_t>(tok)];
      auto [it, fresh] = made.try_emplace({beams[bi].node, tok}, -1);
      if (fresh) {
        it->second = tree.add_child(beams[bi].node, tok, l);
        tree.node(it->second).slot = slots.allocate();
        new_nodes.push_back(it->second);
        if (rec.on()) added.push_back(trace_node(tree.node(it->second)));
      }
      next.push_back({it->second, l});
      if (rec.on()) chosen.push_back({{"beam", k}, {"from_beam", bi}, {"node", it->second}, {"token", tok}, {"score", l},
                                   {"prob", prob[static_cast<size_t>(picks[k])]}});
    }
    beams = std::move(next);
    m.steps = step;
    if (feeds) fwd = feeder.feed(tree, slots.num_slots(), new_nodes, lp, row_of, rec.on());
    json kv = kv_json(step, static_cast<int32_t>(beams.size()));
    if (rec.on()) {
      json fields = {{"added", added}, {"status", status}, {"chosen", chosen}, {"kv", kv}};
      if (feeds) fields["forward"] = fwd;
      rec.step(step, "sample", std::move(fields), tree, slots.num_slots());
    }
  }
  // Hypotheses: the distinct final beams, highest target log-likelihood first.
  std::vector<Beam> fin = beams;
  std::stable_sort(fin.begin(), fin.end(), [](const Beam& a, const Beam& b) { return a.lp > b.lp; });
  std::vector<int32_t> seen;
  for (const Beam& b : fin) {
    if (std::find(seen.begin(), seen.end(), b.node) != seen.end()) continue;
    seen.push_back(b.node);
    Hypothesis h;
    h.tokens = tree.path_tokens(b.node);
    h.tokens.erase(h.tokens.begin(), h.tokens.begin() + n);
    h.sum_logprobs = b.lp;
    h.score = h.tokens.empty() ? 0.0 : b.lp / static_cast<double>(h.tokens.size());
    res.decode.hypotheses.push_back(std::move(h));
  }
  m.model_calls = feeder.calls;
  m.computed_tokens = feeder.tokens;
  m.final_slots = slots.num_slots();
  m.peak_slots = slots.peak();
  m.peak_bytes = m.peak_slots * bps;
  m.batch_peak_bytes = m.batch_peak_slots * bps;
  m.output_len = res.decode.hypotheses.empty() ? 0 : static_cast<int32_t>(res.decode.hypotheses.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n, m.output_len);
  m.batch_mem_per_token = mem_per_token(m.batch_peak_bytes, n, m.output_len);
  res.sampling.target_calls = feeder.calls;
  res.sampling.target_tokens = feeder.tokens;
  res.sampling.log_likelihood = res.decode.hypotheses.empty() ? 0.0 : res.decode.hypotheses.front().sum_logprobs;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) {
    json outs = json::array();
    for (auto& h : res.decode.hypotheses) outs.push_back({{"tokens", h.tokens}, {"score", h.score}, {"sum_logprobs", h.sum_logprobs}});
    json metrics = m.to_json();
    metrics["sampling"] = res.sampling.to_json();
    rec.summary(std::move(outs), std::move(metrics), m.seconds, tree, slots.num_slots());
  }
  return res;
}

}  // namespace triescope
