#include "core/decode/dsbd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <unordered_map>

#include "core/common/error.h"
#include "core/trace/trace_recorder.h"
#include "core/decode/trie_beam_search.h"

namespace triescope {

DsbdConfig DsbdConfig::from_json(JsonObjectReader r, int32_t default_width) {
  DsbdConfig c;
  c.draft_width = static_cast<int32_t>(r.get_int("draft_width", 1, 4096));
  c.gamma = static_cast<int32_t>(r.get_int("gamma", 1, 64));
  c.dynamic = r.get_bool("dynamic", true);
  c.width = static_cast<int32_t>(r.get_int("width", 1, 4096, default_width));
  c.threshold = r.get_double("threshold", 0.0, 1.0, 0.9);
  c.min_width = static_cast<int32_t>(r.get_int("min_width", 1, 4096, 1));
  c.memory_constrained = r.get_bool("memory_constrained", false);
  const std::string ratio = r.get_string("accept_ratio", "p/q");
  TS_CHECK(ratio == "p/q" || ratio == "q/p", r.where("accept_ratio") << " must be \"p/q\" or \"q/p\", got \"" << ratio << "\"");
  c.ratio = ratio == "p/q" ? AcceptRatio::p_over_q : AcceptRatio::q_over_p;
  c.renormalize_q = r.get_bool("renormalize_q", true);
  TS_CHECK(c.min_width <= c.draft_width, r.where("min_width") << " = " << c.min_width << " exceeds draft_width " << c.draft_width);
  r.finish();
  return c;
}

nlohmann::json DsbdConfig::to_json() const {
  return {{"draft_width", draft_width},
          {"gamma", gamma},
          {"width", width},
          {"dynamic", dynamic},
          {"threshold", threshold},
          {"min_width", min_width},
          {"memory_constrained", memory_constrained},
          {"accept_ratio", ratio == AcceptRatio::p_over_q ? "p/q" : "q/p"},
          {"renormalize_q", renormalize_q},
          {"max_new_tokens", max_new_tokens},
          {"sampling", sampling.to_json()}};
}

nlohmann::json DsbdStats::to_json() const {
  return {{"iterations", iterations},
          {"full_iterations", full_iterations},
          {"steps_in_full_iterations", steps_in_full_iterations},
          {"layer_verified", layer_verified},
          {"layer_accepted", layer_accepted},
          {"predicted_accept_sum", predicted_accept_sum},
          {"width_sum", width_sum},
          {"draft_beams_tested", draft_beams_tested},
          {"draft_beams_accepted", draft_beams_accepted},
          {"paper_peak_slots", paper_peak_slots},
          {"shared_peak_slots", shared_peak_slots}};
}

namespace {

inline double accept_ratio(double p, double q, AcceptRatio r) {
  if (r == AcceptRatio::p_over_q) return q > 0.0 ? p / q : 1.0;
  return p > 0.0 ? q / p : 1.0;  // the paper's printed line 17 (negative control)
}

// norm(max(0, a - q)); false when nothing is left (a == q).
bool residual_update(std::vector<double>& a, const std::vector<double>& q) {
  double mass = 0.0;
  for (size_t i = 0; i < a.size(); ++i) mass += (a[i] = std::max(0.0, a[i] - q[i]));
  if (!(mass > 1e-300)) return false;
  for (double& x : a) x /= mass;
  return true;
}

}  // namespace

std::vector<double> dsbd_alphas(const std::vector<double>& p, const std::vector<double>& q, int32_t m, AcceptRatio ratio) {
  TS_CHECK(p.size() == q.size(), "dsbd: p and q have different domains (" << p.size() << " vs " << q.size() << ")");
  std::vector<double> alphas;
  std::vector<double> pj = p;  // p_1 = p_beam (Eq. 4)
  bool exhausted = false;
  for (int32_t j = 0; j < m; ++j) {
    if (exhausted) {  // p_j == q: a draft can no longer be rejected
      alphas.push_back(1.0);
      continue;
    }
    double a = 0.0;
    for (size_t x = 0; x < q.size(); ++x)
      if (q[x] > 0.0) a += q[x] * std::min(1.0, accept_ratio(pj[x], q[x], ratio));
    alphas.push_back(std::min(1.0, a));
    exhausted = !residual_update(pj, q);
  }
  return alphas;
}

std::vector<double> dsbd_accept_count_probs(const std::vector<double>& alphas, int32_t m) {
  TS_CHECK(m >= 0 && static_cast<size_t>(m) <= alphas.size(), "dsbd: need " << m << " alphas, got " << alphas.size());
  // first[i] = P~(i) of Eq. 3 (1-based i), none[m'] = P(m', 0).
  std::vector<double> first(static_cast<size_t>(m) + 1, 0.0), none(static_cast<size_t>(m) + 1, 1.0);
  double run = 1.0;
  for (int32_t i = 1; i <= m; ++i) {
    first[static_cast<size_t>(i)] = alphas[static_cast<size_t>(i - 1)] * run;
    run *= 1.0 - alphas[static_cast<size_t>(i - 1)];
    none[static_cast<size_t>(i)] = run;
  }
  // P[mm][k] over mm = 0..m drafts left with a fresh p' = p_beam (Eq. 2).
  std::vector<std::vector<double>> P(static_cast<size_t>(m) + 1, std::vector<double>(static_cast<size_t>(m) + 1, 0.0));
  for (int32_t mm = 0; mm <= m; ++mm) P[static_cast<size_t>(mm)][0] = none[static_cast<size_t>(mm)];
  for (int32_t mm = 1; mm <= m; ++mm)
    for (int32_t k = 1; k <= mm; ++k) {
      double s = 0.0;
      for (int32_t i = 1; i <= mm; ++i) s += first[static_cast<size_t>(i)] * P[static_cast<size_t>(mm - i)][static_cast<size_t>(k - 1)];
      P[static_cast<size_t>(mm)][static_cast<size_t>(k)] = s;
    }
  return P[static_cast<size_t>(m)];
}

int32_t dsbd_width(const std::vector<double>& p, const std::vector<double>& q, int32_t m, double t, int32_t w_min,
                   AcceptRatio ratio, double* prob_at_least) {
  const std::vector<double> P = dsbd_accept_count_probs(dsbd_alphas(p, q, m, ratio), m);
  auto at_least = [&](int32_t K) {  // Eq. 5, summed from the top for accuracy
    double s = 0.0;
    for (int32_t k = std::max(K, 0); k <= m; ++k) s += P[static_cast<size_t>(k)];
    return s;
  };
  int32_t K = 0;
  for (int32_t k = 1; k <= m; ++k)
    if (at_least(k) >= t) K = k;  // Eq. 7 (at_least is non-increasing in k)
  const int32_t w = std::max(w_min, K);  // Eq. 6
  if (prob_at_least) *prob_at_least = w <= m ? at_least(w) : 0.0;
  return w;
}

LayerResult dsbd_verify_layer(const std::vector<double>& p, const std::vector<double>& q, const std::vector<int64_t>& drafts,
                              int32_t width, AcceptRatio ratio, const UniformFn& uniform) {
  TS_CHECK(p.size() == q.size(), "dsbd verify: p and q have different domains");
  TS_CHECK(width >= 1, "dsbd verify: width must be >= 1, got " << width);
  LayerResult res;
  std::vector<double> pp = p;  // p' (line 13)
  int32_t accepted = 0;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const auto x = static_cast<size_t>(drafts[i]);
    TS_CHECK(x < p.size(), "dsbd verify: draft pair " << drafts[i] << " outside the domain of " << p.size());
    LayerDecision d;
    d.pair = drafts[i];
    d.draft = static_cast<int32_t>(i);
    d.accept_prob = std::min(1.0, accept_ratio(pp[x], q[x], ratio));  // line 17
    d.u = uniform(RandStream::verify_accept, static_cast<uint32_t>(i));
    d.accepted = d.u < d.accept_prob;
    res.tested.push_back(d);
    if (d.accepted) {
      res.outputs.push_back(d.pair);
      pp = p;  // line 19
      if (++accepted == width) {  // lines 23-25
        res.passed = true;
        return res;
      }
    } else if (!residual_update(pp, q)) {  // line 22
      pp = q;  // p' == q: nothing left to correct, and the next draft is accepted surely
    }
  }
  // Lines 26-29: one beam from p', the rest from p_beam.
  res.outputs.push_back(sample_index(pp, uniform(RandStream::residual_sample, 0)));
  for (uint32_t k = 0; static_cast<int32_t>(res.outputs.size()) < width; ++k)
    res.outputs.push_back(sample_index(p, uniform(RandStream::target_sample, k)));
  return res;
}

std::vector<int32_t> dsbd_forest_order(const TokenTree& tree, const std::vector<int32_t>& roots, const std::vector<char>& in_forest) {
  std::vector<int32_t> out, stack;
  for (int32_t r : roots) {
    if (std::find(out.begin(), out.end(), r) != out.end()) continue;  // equal input beams share one tree
    stack.push_back(r);
    while (!stack.empty()) {
      const int32_t id = stack.back();
      stack.pop_back();
      out.push_back(id);
      const auto& ch = tree.children(id);
      for (auto it = ch.rbegin(); it != ch.rend(); ++it)
        if (static_cast<size_t>(*it) < in_forest.size() && in_forest[static_cast<size_t>(*it)]) stack.push_back(*it);
    }
  }
  return out;
}

namespace {

struct DraftLayer {
  std::vector<int32_t> nodes;       // [W] the layer's beams (a multiset: equal beams share a node)
  std::vector<int32_t> parent;      // [W] index of each beam's parent in the previous layer
  std::vector<double> q_full;       // [prev W x V] q_beam the layer was drawn from (layers >= 1)
};

struct Accepted {
  int32_t node;
  int32_t s_idx;  // index in the previous draft layer's list (input-beam index at layer 0)
  double tlp;     // target joint log-likelihood (unwarped)
};

json kv_record(const KvSlots& slots, int64_t bps, int64_t paper, int32_t live) {
  // batch_slots: the paper's layout, one cache per input beam (Section 3.3), at the same moment.
  return {{"slots", slots.num_slots()}, {"peak", slots.peak()},       {"bytes", slots.num_slots() * bps},
          {"batch_slots", paper},       {"batch_bytes", paper * bps}, {"live_beams", live}};
}

}  // namespace

DsbdResult dsbd_decode(Model& target, Model& draft, const std::vector<int32_t>& prompt, const DsbdConfig& cfg,
                       TraceSink* trace, const DecodeOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = target.vocab_size();
  const int32_t n = static_cast<int32_t>(prompt.size());
  prompt_check(prompt, V, "dsbd");
  TS_CHECK(draft.vocab_size() == V, "dsbd: draft vocabulary " << draft.vocab_size() << " != target vocabulary " << V);
  TS_CHECK(cfg.draft_width >= 1 && cfg.gamma >= 1 && cfg.width >= 1 && cfg.min_width >= 1,
           "dsbd: draft_width, gamma, width and min_width must be >= 1");
  TS_CHECK(cfg.max_new_tokens >= 1, "dsbd: max_new_tokens must be >= 1, got " << cfg.max_new_tokens);
  TS_CHECK(!cfg.sampling.deterministic, "dsbd: sampling.deterministic is not supported (verification is stochastic)");
  TS_CHECK(cfg.threshold >= 0.0 && cfg.threshold <= 1.0, "dsbd: threshold must be in [0, 1], got " << cfg.threshold);
  target.reset();
  draft.reset();
  TokenTree tree;
  KvSlots slots;
  TreeFeeder tf(target), df(draft);
  const PhiloxKey key{cfg.sampling.seed};
  DsbdResult result;
  SamplingDecodeResult& res = result.out;
  DsbdStats& st = result.stats;
  st.layer_verified.assign(static_cast<size_t>(cfg.gamma), 0);
  st.layer_accepted.assign(static_cast<size_t>(cfg.gamma), 0);
  DecodeMetrics& m = res.decode.metrics;
  m.prompt_len = n;
  const int64_t bps = target.kv_shape().bytes_per_slot();
  TraceRecorder rec(trace, opt.keyframe_interval);
  if (rec.on()) {
    json config = cfg.to_json();
    config["prompt"] = prompt;
    config["draft_model"] = draft.describe();
    rec.header("dsbd", opt.backend, config, target.describe(), target.vocab_strings(), kVerifyDsbdLayers);
  }
  // Per-node joint log-likelihoods: under the target (known once the parent's
  // target row is) and under the draft (q_beam's weights, Section 3.1).
  std::vector<double> node_tlp, node_dlp;
  std::vector<char> has_dlp;
  auto grow = [&] {
    node_tlp.resize(static_cast<size_t>(tree.size()), 0.0);
    node_dlp.resize(static_cast<size_t>(tree.size()), 0.0);
    has_dlp.resize(static_cast<size_t>(tree.size()), 0);
  };
  std::vector<double> tlp_rows, dlp_rows;
  std::vector<int32_t> trow, drow;
  const std::vector<int32_t> prompt_nodes = tree.add_chain(kNoNode, prompt);
  for (int32_t id : prompt_nodes) tree.node(id).slot = slots.allocate();
  grow();
  has_dlp[static_cast<size_t>(prompt_nodes.back())] = 1;  // likelihoods are conditioned on the prompt
  int32_t step = 0;
  {
    // Prefill all but the last prompt token: that token is the root of the
    // first forest and is scored by the first forest pass.
    const std::vector<int32_t> pre(prompt_nodes.begin(), prompt_nodes.end() - 1);
    json fields = json::object();
    if (!pre.empty()) {
      fields["forward"] = tf.feed(tree, slots.num_slots(), pre, tlp_rows, trow, rec.on());
      fields["draft_forward"] = df.feed(tree, slots.num_slots(), pre, dlp_rows, drow, rec.on());
    }
    if (rec.on()) {
      json added = json::array();
      for (int32_t id : prompt_nodes) added.push_back(trace_node(tree.node(id)));
      fields["added"] = added;
      fields["kv"] = kv_record(slots, bps, n, 1);
      rec.step(0, "prefill", std::move(fields), tree, slots.num_slots());
    }
  }

  std::vector<int32_t> beams = {prompt_nodes.back()};  // input beams (multiset of nodes)
  int32_t generated = 0;
  int64_t iteration = 0;
  // Draft log-softmax rows of this iteration's draft forwards: node -> row.
  std::unordered_map<int32_t, std::vector<double>> drafted_rows;
  auto dlp_of = [&](int32_t node) -> double {
    if (has_dlp[static_cast<size_t>(node)]) return node_dlp[static_cast<size_t>(node)];
    const int32_t parent = tree.node(node).parent;
    auto it = drafted_rows.find(parent);
    TS_CHECK(it != drafted_rows.end() && has_dlp[static_cast<size_t>(parent)],
             "dsbd: internal: draft likelihood of node " << node << " is unknown");
    node_dlp[static_cast<size_t>(node)] = node_dlp[static_cast<size_t>(parent)] + it->second[static_cast<size_t>(tree.node(node).token)];
    has_dlp[static_cast<size_t>(node)] = 1;
    return node_dlp[static_cast<size_t>(node)];
  };

  while (generated < cfg.max_new_tokens) {
    ++iteration;
    const auto it32 = static_cast<uint32_t>(iteration);
    const int32_t g = std::min(cfg.gamma, cfg.max_new_tokens - generated - 1);
    std::vector<int32_t> distinct_beams;
    for (int32_t b : beams)
      if (std::find(distinct_beams.begin(), distinct_beams.end(), b) == distinct_beams.end()) distinct_beams.push_back(b);
    if (iteration > 1) {
      // Rejected branches and dropped beams give their slots back: keep the
      // input beams' ancestors only (trie paper 3.5, one gather per model).
      const CompactionPlan plan = kv_collect_garbage(tree, distinct_beams, slots.num_slots());
      target.compact(plan);
      draft.compact(plan);
      slots.apply(plan);
      ++m.gc_runs;
      rec.gc(step + 1, plan);
    }

    // ---- draft (Section 3.1, Figure 2a): beam sampling of width W_S for g steps
    drafted_rows.clear();
    std::vector<DraftLayer> layers(static_cast<size_t>(g) + 1);
    layers[0].nodes = beams;
    json draft_added = json::array(), draft_fw = json::array(), draft_layers = json::array();
    std::vector<char> in_forest(static_cast<size_t>(tree.size()), 0);
    for (int32_t b : beams) in_forest[static_cast<size_t>(b)] = 1;
    for (int32_t j = 1; j <= g; ++j) {
      const DraftLayer& prev = layers[static_cast<size_t>(j - 1)];
      std::vector<int32_t> q_nodes;
      for (int32_t b : prev.nodes)
        if (std::find(q_nodes.begin(), q_nodes.end(), b) == q_nodes.end()) q_nodes.push_back(b);
      json f = df.feed(tree, slots.num_slots(), q_nodes, dlp_rows, drow, rec.on());
      if (rec.on()) draft_fw.push_back(f);
      for (int32_t id = 0; id < tree.size(); ++id) {
        const int32_t r = drow[static_cast<size_t>(id)];
        if (r >= 0) drafted_rows[id].assign(dlp_rows.begin() + static_cast<std::ptrdiff_t>(r) * V,
                                            dlp_rows.begin() + static_cast<std::ptrdiff_t>(r + 1) * V);
      }
      const size_t w = prev.nodes.size();
      std::vector<double> beam_lp(w), token_lp(w * static_cast<size_t>(V));
      for (size_t i = 0; i < w; ++i) {
        beam_lp[i] = dlp_of(prev.nodes[i]);
        const auto& row = drafted_rows.at(prev.nodes[i]);
        std::copy(row.begin(), row.end(), token_lp.begin() + static_cast<std::ptrdiff_t>(i) * V);
      }
      DraftLayer& cur = layers[static_cast<size_t>(j)];
      cur.q_full = beam_distribution(beam_lp, token_lp, V, cfg.sampling);  // q_beam (Section 3.1)
      std::map<std::pair<int32_t, int32_t>, int32_t> made;
      json lj = json::array();
      for (int32_t i = 0; i < cfg.draft_width; ++i) {
        const int64_t pair = sample_index(cur.q_full, philox_uniform(key, it32, static_cast<uint32_t>(j), 0, static_cast<uint32_t>(i),
                                                                    RandStream::draft_sample));
        const auto pi = static_cast<int32_t>(pair / V);
        const auto tok = static_cast<int32_t>(pair % V);
        const int32_t parent = prev.nodes[static_cast<size_t>(pi)];
        auto [mit, fresh] = made.try_emplace({parent, tok}, -1);
        if (fresh) {
          const double dl = beam_lp[static_cast<size_t>(pi)] + token_lp[static_cast<size_t>(pair)];
          mit->second = tree.add_child(parent, tok, dl);
          tree.node(mit->second).slot = slots.allocate();
          grow();
          in_forest.resize(static_cast<size_t>(tree.size()), 0);
          in_forest[static_cast<size_t>(mit->second)] = 1;
          node_dlp[static_cast<size_t>(mit->second)] = dl;
          has_dlp[static_cast<size_t>(mit->second)] = 1;
          if (rec.on()) draft_added.push_back(trace_node(tree.node(mit->second)));
        }
        cur.nodes.push_back(mit->second);
        cur.parent.push_back(pi);
        if (rec.on()) lj.push_back({{"beam", i}, {"node", mit->second}, {"parent_beam", pi}, {"token", tok}, {"q_beam", cur.q_full[static_cast<size_t>(pair)]}});
      }
      if (rec.on()) draft_layers.push_back({{"layer", j}, {"beams", lj}});
    }
    // Paper layout (Section 3.3): one cache per input beam holding its whole
    // path, plus its draft tree. Counted at the same moment as ours.
    int64_t paper = 0;
    for (int32_t b : beams) paper += tree.node(b).depth + 1;
    for (int32_t id = 0; id < tree.size(); ++id)
      if (in_forest[static_cast<size_t>(id)] && std::find(distinct_beams.begin(), distinct_beams.end(), id) == distinct_beams.end()) ++paper;
    st.paper_peak_slots = std::max(st.paper_peak_slots, paper);
    ++step;
    if (rec.on())
      rec.step(step, "draft",
               {{"iteration", iteration}, {"added", draft_added}, {"draft_layers", draft_layers}, {"draft_forwards", draft_fw},
                {"kv", kv_record(slots, bps, paper, static_cast<int32_t>(beams.size()))}},
               tree, slots.num_slots());

    // ---- the target scores the whole forest in one pass (Section 3.3, Figure 3)
    const std::vector<int32_t> order = dsbd_forest_order(tree, beams, in_forest);
    const json fwd = tf.feed(tree, slots.num_slots(), order, tlp_rows, trow, rec.on());
    auto target_row = [&](int32_t node) {
      const int32_t r = trow[static_cast<size_t>(node)];
      TS_CHECK(r >= 0, "dsbd: internal: node " << node << " missing from the forest pass");
      return tlp_rows.data() + static_cast<std::ptrdiff_t>(r) * V;
    };
    json target_lp = json::array();
    if (rec.on())
      for (int32_t id : order)
        if (std::find(distinct_beams.begin(), distinct_beams.end(), id) == distinct_beams.end())
          target_lp.push_back({id, target_row(tree.node(id).parent)[tree.node(id).token]});

    // ---- verification, layer by layer (Algorithm 1)
    std::vector<Accepted> A;
    for (size_t i = 0; i < beams.size(); ++i) A.push_back({beams[i], static_cast<int32_t>(i), node_tlp[static_cast<size_t>(beams[i])]});
    json status = json::array(), added = json::array(), vlayers = json::array();
    auto set_status = [&](int32_t node, NodeStatus s) {
      tree.node(node).status = s;
      if (rec.on()) status.push_back({{"node", node}, {"status", std::string(node_status_name(s))}});
    };
    std::map<std::pair<int32_t, int32_t>, int32_t> sampled_made;
    auto child_for = [&](int32_t parent, int32_t tok, double tl) {
      // A sampled beam reuses this iteration's node for the same (parent, token), drafted or sampled.
      for (int32_t c : tree.children(parent))
        if (tree.node(c).token == tok && static_cast<size_t>(c) < in_forest.size() && in_forest[static_cast<size_t>(c)]) {
          node_tlp[static_cast<size_t>(c)] = tl;
          tree.node(c).logprob = tl;
          return c;
        }
      auto [sit, fresh] = sampled_made.try_emplace({parent, tok}, -1);
      if (fresh) {
        sit->second = tree.add_child(parent, tok, tl);
        tree.node(sit->second).slot = slots.allocate();
        grow();
        node_tlp[static_cast<size_t>(sit->second)] = tl;
        if (drafted_rows.count(parent) && has_dlp[static_cast<size_t>(parent)]) dlp_of(sit->second);
        if (rec.on()) added.push_back(trace_node(tree.node(sit->second)));
      }
      return sit->second;
    };
    std::vector<int32_t> outputs;
    int32_t l_last = g + 1;
    for (int32_t l = 1; l <= g; ++l) {
      const DraftLayer& L = layers[static_cast<size_t>(l)];
      const size_t prev_w = layers[static_cast<size_t>(l - 1)].nodes.size();
      std::vector<int32_t> pos_in_A(prev_w, -1);
      for (size_t k = 0; k < A.size(); ++k) pos_in_A[static_cast<size_t>(A[k].s_idx)] = static_cast<int32_t>(k);
      // p_beam^(l) over the accepted parents (line 12), q_beam^(l) restricted
      // to the same parents and renormalised: the surviving drafts are iid
      // draws from exactly that distribution (docs/dsbd.md).
      const size_t na = A.size();
      std::vector<double> beam_lp(na), token_lp(na * static_cast<size_t>(V)), q(na * static_cast<size_t>(V));
      double qmass = 0.0;
      for (size_t k = 0; k < na; ++k) {
        beam_lp[k] = A[k].tlp;
        std::copy_n(target_row(A[k].node), V, token_lp.begin() + static_cast<std::ptrdiff_t>(k) * V);
        for (int32_t x = 0; x < V; ++x)
          qmass += q[k * V + static_cast<size_t>(x)] = L.q_full[static_cast<size_t>(A[k].s_idx) * V + static_cast<size_t>(x)];
      }
      if (cfg.renormalize_q)
        for (double& x : q) x /= qmass;
      const std::vector<double> p = beam_distribution(beam_lp, token_lp, V, cfg.sampling);
      std::vector<int64_t> drafts;
      std::vector<int32_t> draft_of;  // surviving draft -> index in L
      json parent_rejected = json::array();
      for (size_t i = 0; i < L.nodes.size(); ++i) {
        const int32_t k = pos_in_A[static_cast<size_t>(L.parent[i])];
        if (k < 0) {  // line 10: children of rejected beams are rejected
          if (tree.node(L.nodes[i]).status == NodeStatus::live) set_status(L.nodes[i], NodeStatus::rejected);
          if (rec.on()) parent_rejected.push_back(L.nodes[i]);
          continue;
        }
        drafts.push_back(int64_t{k} * V + tree.node(L.nodes[i]).token);
        draft_of.push_back(static_cast<int32_t>(i));
      }
      const auto ms = static_cast<int32_t>(drafts.size());
      double predicted = 0.0;
      int32_t width = cfg.width;
      if (cfg.dynamic) {
        width = dsbd_width(p, q, ms, cfg.threshold, cfg.min_width, cfg.ratio, &predicted);  // line 14, Eq. 2-7
      } else {
        const auto P = dsbd_accept_count_probs(dsbd_alphas(p, q, ms, cfg.ratio), ms);
        for (int32_t k = width; k <= ms; ++k) predicted += P[static_cast<size_t>(k)];
      }
      const LayerResult lr =
          opt.dsbd_verifier
              ? opt.dsbd_verifier->verify_layer(p, q, drafts, width, cfg.ratio, cfg.sampling.seed, it32, static_cast<uint32_t>(l))
              : dsbd_verify_layer(p, q, drafts, width, cfg.ratio, [&](RandStream s, uint32_t d) {
                  return philox_uniform(key, it32, static_cast<uint32_t>(l), 0, d, s);
                });
      ++st.layer_verified[static_cast<size_t>(l - 1)];
      st.predicted_accept_sum += predicted;
      st.width_sum += width;
      if (lr.passed) ++st.layer_accepted[static_cast<size_t>(l - 1)];
      std::vector<char> tested(drafts.size(), 0);
      json dj = json::array();
      for (const LayerDecision& d : lr.tested) {
        tested[static_cast<size_t>(d.draft)] = 1;
        ++st.draft_beams_tested;
        st.draft_beams_accepted += d.accepted;
        const int32_t node = L.nodes[static_cast<size_t>(draft_of[static_cast<size_t>(d.draft)])];
        if (d.accepted) set_status(node, NodeStatus::accepted);
        else if (tree.node(node).status != NodeStatus::accepted) set_status(node, NodeStatus::rejected);
        if (rec.on()) dj.push_back({{"beam", draft_of[static_cast<size_t>(d.draft)]}, {"node", node}, {"accept_prob", d.accept_prob},
                                 {"u", d.u}, {"accepted", d.accepted}, {"p", p[static_cast<size_t>(d.pair)]}, {"q", q[static_cast<size_t>(d.pair)]}});
      }
      for (size_t i = 0; i < drafts.size(); ++i)  // lines 23-24: the rest of a full layer
        if (!tested[i]) {
          const int32_t node = L.nodes[static_cast<size_t>(draft_of[i])];
          if (tree.node(node).status == NodeStatus::live) set_status(node, NodeStatus::rejected);
        }
      json lrec = {{"layer", l}, {"width", width}, {"surviving_drafts", ms}, {"predicted_accept", predicted},
                   {"drafts", dj}, {"parent_rejected", parent_rejected}, {"passed", lr.passed}};
      if (lr.passed) {
        std::vector<Accepted> next;
        for (const LayerDecision& d : lr.tested)
          if (d.accepted) {
            const int32_t li = draft_of[static_cast<size_t>(d.draft)];
            const int32_t node = L.nodes[static_cast<size_t>(li)];
            const size_t k = static_cast<size_t>(d.pair / V);
            const double tl = A[k].tlp + token_lp[static_cast<size_t>(d.pair)];
            node_tlp[static_cast<size_t>(node)] = tl;
            tree.node(node).logprob = tl;
            next.push_back({node, li, tl});
          }
        A = std::move(next);
        if (rec.on()) vlayers.push_back(lrec);
        continue;
      }
      // Lines 26-31: the layer is short; accepted drafts plus sampled beams are the output.
      json sampled = json::array();
      size_t from_draft = 0;
      for (const LayerDecision& d : lr.tested) from_draft += d.accepted;
      for (size_t o = 0; o < lr.outputs.size(); ++o) {
        const int64_t pair = lr.outputs[o];
        const size_t k = static_cast<size_t>(pair / V);
        const auto tok = static_cast<int32_t>(pair % V);
        const double tl = A[k].tlp + token_lp[static_cast<size_t>(pair)];
        const int32_t node = child_for(A[k].node, tok, tl);
        if (o >= from_draft) {
          if (tree.node(node).status != NodeStatus::live) set_status(node, NodeStatus::live);
          if (rec.on()) sampled.push_back({{"node", node}, {"from", o == from_draft ? "residual" : "p_beam"}, {"prob", p[static_cast<size_t>(pair)]}});
        }
        outputs.push_back(node);
      }
      lrec["sampled"] = sampled;
      if (rec.on()) vlayers.push_back(lrec);
      l_last = l;
      break;
    }
    json extra = json();
    if (l_last == g + 1) {  // lines 32-34: every layer passed, one more layer from p_beam^(g+1)
      const size_t na = A.size();
      std::vector<double> beam_lp(na), token_lp(na * static_cast<size_t>(V));
      for (size_t k = 0; k < na; ++k) {
        beam_lp[k] = A[k].tlp;
        std::copy_n(target_row(A[k].node), V, token_lp.begin() + static_cast<std::ptrdiff_t>(k) * V);
      }
      const std::vector<double> p = beam_distribution(beam_lp, token_lp, V, cfg.sampling);
      const int32_t w = (g == 0 || !cfg.dynamic) ? cfg.width : static_cast<int32_t>(na);
      extra = {{"layer", g + 1}, {"width", w}, {"sampled", json::array()}};
      for (int32_t k = 0; k < w; ++k) {
        const int64_t pair = sample_index(p, philox_uniform(key, it32, static_cast<uint32_t>(g + 1), 0, static_cast<uint32_t>(k),
                                                            RandStream::target_sample));
        const size_t a = static_cast<size_t>(pair / V);
        const int32_t node = child_for(A[a].node, static_cast<int32_t>(pair % V), A[a].tlp + token_lp[static_cast<size_t>(pair)]);
        outputs.push_back(node);
        if (rec.on()) extra["sampled"].push_back({{"node", node}, {"prob", p[static_cast<size_t>(pair)]}});
      }
    }
    if (g == cfg.gamma) {
      ++st.full_iterations;
      st.steps_in_full_iterations += l_last;
    }
    generated += l_last;
    ++st.iterations;

    // Section 3.4: keep only the lowest-perplexity output (equal lengths:
    // the highest target log-likelihood; the first on ties).
    if (cfg.memory_constrained) {
      size_t best = 0;
      for (size_t i = 1; i < outputs.size(); ++i)
        if (node_tlp[static_cast<size_t>(outputs[i])] > node_tlp[static_cast<size_t>(outputs[best])]) best = i;
      outputs = {outputs[best]};
    }
    // Nodes that lead to no output and were never decided are dead; accepted
    // and rejected ones keep the decision the verify record shows.
    std::vector<char> keep(static_cast<size_t>(tree.size()), 0);
    for (int32_t o : outputs)
      for (int32_t a = o; a != kNoNode && !keep[static_cast<size_t>(a)]; a = tree.node(a).parent) keep[static_cast<size_t>(a)] = 1;
    // Every live node that leads to no output is dead now, whichever
    // iteration made it (an earlier output's branch dies when no output of
    // this one descends from it; the next gc frees its slots).
    for (int32_t id = 0; id < tree.size(); ++id)
      if (!keep[static_cast<size_t>(id)] && tree.node(id).depth >= n && tree.node(id).status == NodeStatus::live)
        set_status(id, NodeStatus::pruned);
    beams = outputs;
    st.shared_peak_slots = slots.peak();
    ++step;
    if (rec.on()) {
      json chosen = json::array();
      for (size_t i = 0; i < beams.size(); ++i)
        chosen.push_back({{"beam", i}, {"node", beams[i]}, {"token", tree.node(beams[i]).token}, {"score", node_tlp[static_cast<size_t>(beams[i])]}});
      json verify = {{"kind", kVerifyDsbdLayers}, {"iteration", iteration}, {"gamma", g}, {"layers", vlayers}, {"steps", l_last},
                     {"stopped_at_layer", l_last <= g ? json(l_last) : json()}, {"extra_layer", extra}};
      rec.step(step, "verify",
               {{"iteration", iteration}, {"added", added}, {"status", status}, {"chosen", chosen}, {"forward", fwd}, {"verify", verify},
                {"target_logprob", target_lp}, {"kv", kv_record(slots, bps, paper, static_cast<int32_t>(beams.size()))}},
               tree, slots.num_slots());
    }
  }

  // Hypotheses: the distinct final beams, highest target log-likelihood first.
  std::vector<int32_t> fin = beams;
  std::stable_sort(fin.begin(), fin.end(), [&](int32_t a, int32_t b) { return node_tlp[static_cast<size_t>(a)] > node_tlp[static_cast<size_t>(b)]; });
  std::vector<int32_t> seen;
  for (int32_t b : fin) {
    if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
    seen.push_back(b);
    Hypothesis h;
    h.tokens = tree.path_tokens(b);
    h.tokens.erase(h.tokens.begin(), h.tokens.begin() + n);
    h.sum_logprobs = node_tlp[static_cast<size_t>(b)];
    h.score = h.sum_logprobs / static_cast<double>(h.tokens.size());
    res.decode.hypotheses.push_back(std::move(h));
  }
  res.sampling.iterations = st.iterations;
  res.sampling.target_calls = tf.calls;
  res.sampling.draft_calls = df.calls;
  res.sampling.target_tokens = tf.tokens;
  res.sampling.draft_tokens = df.tokens;
  for (int64_t x : st.layer_verified) res.sampling.layers_verified += x;
  for (int64_t x : st.layer_accepted) res.sampling.layers_accepted += x;
  res.sampling.log_likelihood = res.decode.hypotheses.front().sum_logprobs;
  st.shared_peak_slots = slots.peak();
  m.steps = step;
  m.model_calls = tf.calls;
  m.computed_tokens = tf.tokens;
  m.final_slots = slots.num_slots();
  m.peak_slots = slots.peak();
  m.peak_bytes = m.peak_slots * bps;
  m.batch_peak_slots = st.paper_peak_slots;
  m.batch_peak_bytes = st.paper_peak_slots * bps;
  m.output_len = static_cast<int32_t>(res.decode.hypotheses.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n, m.output_len);
  m.batch_mem_per_token = mem_per_token(m.batch_peak_bytes, n, m.output_len);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) {
    json outs = json::array();
    for (auto& h : res.decode.hypotheses) outs.push_back({{"tokens", h.tokens}, {"score", h.score}, {"sum_logprobs", h.sum_logprobs}});
    json metrics = m.to_json();
    metrics["sampling"] = res.sampling.to_json();
    metrics["dsbd"] = st.to_json();
    rec.summary(std::move(outs), std::move(metrics), m.seconds, tree, slots.num_slots());
  }
  return result;
}

}  // namespace triescope
