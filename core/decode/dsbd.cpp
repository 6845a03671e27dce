#include "core/decode/dsbd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <unordered_map>

#include "core/common/error.h"
#include "core/decode/dsbd_math.h"
#include "core/decode/decoder_call.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/trace/dsbd_layers_verify_record.h"
#include "core/trace/trace_recorder.h"

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

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DsbdStats, iterations, full_iterations, steps_in_full_iterations, layer_verified, layer_accepted,
                                   predicted_accept_sum, width_sum, draft_beams_tested, draft_beams_accepted, paper_peak_slots,
                                   shared_peak_slots)
nlohmann::json DsbdStats::to_json() const { return *this; }

namespace {

// min(1, line 17's ratio) (core/decode/dsbd_math.h).
double accept_prob(double p, double q, AcceptRatio r) { return dsbd_math::accept_prob(p, q, r == AcceptRatio::q_over_p); }

// norm(max(0, a - q)); false when nothing is left (a == q).
bool residual_update(std::vector<double>& a, const std::vector<double>& q) {
  double mass = 0.0;
  for (size_t i = 0; i < a.size(); ++i) mass += (a[i] = dsbd_math::residual(a[i], q[i]));
  if (!dsbd_math::residual_has_mass(mass)) return false;
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
      if (q[x] > 0.0) a += q[x] * accept_prob(pj[x], q[x], ratio);
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
    d.accept_prob = accept_prob(pp[x], q[x], ratio);  // line 17
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

KvRecord kv_record(const KvSlots& slots, int64_t bps, int64_t paper, int32_t live) {
  // batch_slots: the paper's layout, one cache per input beam (Section 3.3), at the same moment.
  return {.slots = slots.num_slots(), .peak = slots.peak(), .bytes = slots.num_slots() * bps,
          .batch_slots = paper, .batch_bytes = paper * bps, .live_beams = live};
}


// The decode, in the phases of Algorithm 1: one DsbdDecoder per call holds
// the state the phases share; the math the CUDA backend twins (beam
// distributions, the width rule, layer verification) stays in the plain
// functions above.
class DsbdDecoder : DecoderCall<DsbdConfig> {
 public:
  DsbdDecoder(Model& target, Model& draft, const std::vector<int32_t>& prompt, const DsbdConfig& cfg, TraceSink* trace,
              const DecodeOptions& opt)
      : DecoderCall(target, prompt, cfg, trace, opt), draft_(draft), tf_(target), df_(draft), key_{cfg.sampling.seed},
        bps_(target.kv_shape().bytes_per_slot()) {}

  DsbdResult run();

 private:
  // What one draft/verify iteration builds and decides.
  struct Iteration {
    // The draft step's and the verify step's events.
    explicit Iteration(const TraceRecorder& rec)
        : draft(rec, {"added", kDsbdDraftLayersField, kDraftForwardsField}), verify(rec, {"added", "status"}) {}
    uint32_t it32 = 0;
    int32_t g = 0;                        // draft layers this iteration (gamma, or fewer near the end)
    std::vector<int32_t> distinct_beams;  // the input beams without repeats
    std::vector<DraftLayer> layers;       // [g + 1]: layer 0 = the input beams
    std::vector<char> in_forest;          // [nodes] drafted this iteration, or an input beam
    int64_t paper = 0;                    // the paper's layout: one cache per input beam
    std::vector<Accepted> accepted;       // A: the accepted beams of the last layer verified
    std::vector<int32_t> outputs;         // the next input beams
    int32_t l_last = 0;                   // tokens this iteration produced
    std::map<std::pair<int32_t, int32_t>, int32_t> sampled_made;  // (parent, token) -> sampled node
    StepRecord draft, verify;
    // The verify step's verification result, layer by layer (built only
    // when the step is recorded; no layer verified, none extra at first).
    DsbdLayersVerify verified;
  };
  // One verified layer, for its record in verify.layers.
  struct LayerOutcome {
    const DraftLayer& layer;
    const std::vector<double>& p;
    const std::vector<double>& q;
    const std::vector<int32_t>& draft_of;         // surviving draft -> index in the layer
    const std::vector<int32_t>& parent_rejected;  // drafts whose parent was rejected
    const LayerResult& result;
    int32_t width, surviving;
    double predicted;
  };

  void grow();
  double dlp_of(int32_t node);
  void set_status(Iteration& it, int32_t node, NodeStatus s);
  int32_t child_for(Iteration& it, int32_t parent, int32_t tok, double tl);
  const double* target_row(int32_t node) const;

  void prefill();                                        // all but the last prompt token
  void collect_garbage(const Iteration& it);             // the input beams' ancestors only
  void draft_forest(Iteration& it);                      // Section 3.1, Figure 2a
  void score_forest(Iteration& it);                      // Section 3.3, Figure 3: one target pass
  bool verify_layer(Iteration& it, int32_t l);           // Algorithm 1 lines 10-31; false: stop
  void layer_distributions(const std::vector<Accepted>& A, const DraftLayer& L, std::vector<double>& token_lp, std::vector<double>& q,
                           std::vector<double>& p) const;  // line 12
  void mark_tested(Iteration& it, const DraftLayer& L, const std::vector<int32_t>& draft_of, const LayerResult& lr);
  void extra_layer(Iteration& it);                       // lines 32-34
  void choose_outputs(Iteration& it);                    // Section 3.4, and pruning the dead
  void record_layer(Iteration& it, int32_t l, const LayerOutcome& o, size_t first_output);
  void record_verify(Iteration& it);
  DsbdResult finish(double seconds);

  Model& draft_;  // the target is model_
  TokenTree tree_;
  KvSlots slots_;
  TreeFeeder tf_, df_;
  const PhiloxKey key_;
  const int64_t bps_;
  DsbdResult result_;
  // Per-node joint log-likelihoods: under the target (known once the parent's
  // target row is) and under the draft (q_beam's weights, Section 3.1).
  std::vector<double> node_tlp_, node_dlp_;
  std::vector<char> has_dlp_;
  // Draft log-softmax rows of this iteration's draft forwards: node -> row.
  std::unordered_map<int32_t, std::vector<double>> drafted_rows_;
  std::vector<int32_t> beams_;  // input beams (a multiset of nodes)
  int32_t step_ = 0;
  int64_t iteration_ = 0;
};

void DsbdDecoder::grow() {
  node_tlp_.resize(static_cast<size_t>(tree_.size()), 0.0);
  node_dlp_.resize(static_cast<size_t>(tree_.size()), 0.0);
  has_dlp_.resize(static_cast<size_t>(tree_.size()), 0);
}

double DsbdDecoder::dlp_of(int32_t node) {
  if (has_dlp_[static_cast<size_t>(node)]) return node_dlp_[static_cast<size_t>(node)];
  const int32_t parent = tree_.node(node).parent;
  auto it = drafted_rows_.find(parent);
  TS_CHECK(it != drafted_rows_.end() && has_dlp_[static_cast<size_t>(parent)],
           "dsbd: internal: draft likelihood of node " << node << " is unknown");
  node_dlp_[static_cast<size_t>(node)] = node_dlp_[static_cast<size_t>(parent)] + it->second[static_cast<size_t>(tree_.node(node).token)];
  has_dlp_[static_cast<size_t>(node)] = 1;
  return node_dlp_[static_cast<size_t>(node)];
}

void DsbdDecoder::set_status(Iteration& it, int32_t node, NodeStatus s) {
  tree_.node(node).status = s;
  it.verify.status(node, s);
}

int32_t DsbdDecoder::child_for(Iteration& it, int32_t parent, int32_t tok, double tl) {
  // A sampled beam reuses this iteration's node for the same (parent, token), drafted or sampled.
  for (int32_t c : tree_.children(parent))
    if (tree_.node(c).token == tok && static_cast<size_t>(c) < it.in_forest.size() && it.in_forest[static_cast<size_t>(c)]) {
      node_tlp_[static_cast<size_t>(c)] = tl;
      tree_.node(c).logprob = tl;
      return c;
    }
  auto [sit, fresh] = it.sampled_made.try_emplace({parent, tok}, -1);
  if (fresh) {
    sit->second = tree_.add_child(parent, tok, tl);
    tree_.node(sit->second).slot = slots_.allocate();
    grow();
    node_tlp_[static_cast<size_t>(sit->second)] = tl;
    if (drafted_rows_.count(parent) && has_dlp_[static_cast<size_t>(parent)]) dlp_of(sit->second);
    it.verify.added(tree_, sit->second);
  }
  return sit->second;
}

const double* DsbdDecoder::target_row(int32_t node) const {
  const double* row = tf_.row(node);
  TS_CHECK(row != nullptr, "dsbd: internal: node " << node << " missing from the forest pass");
  return row;
}

void DsbdDecoder::prefill() {
  const std::vector<int32_t> prompt_nodes = tree_.add_chain(kNoNode, prompt_);
  for (int32_t id : prompt_nodes) tree_.node(id).slot = slots_.allocate();
  grow();
  has_dlp_[static_cast<size_t>(prompt_nodes.back())] = 1;  // likelihoods are conditioned on the prompt
  // Prefill all but the last prompt token: that token is the root of the
  // first forest and is scored by the first forest pass.
  const std::vector<int32_t> pre(prompt_nodes.begin(), prompt_nodes.end() - 1);
  StepRecord ev(rec_);
  feed_prefill(tf_, df_, tree_, slots_.num_slots(), pre, ev);
  ev.added(tree_, prompt_nodes);
  ev.kv([&] { return kv_record(slots_, bps_, n_, 1); });
  rec_.step(0, "prefill", ev, tree_, slots_.num_slots());
  beams_ = {prompt_nodes.back()};
}

void DsbdDecoder::collect_garbage(const Iteration& it) {
  // Rejected branches and dropped beams give their slots back: keep the
  // input beams' ancestors only (trie paper 3.5, one gather per model).
  const CompactionPlan plan = kv_collect_garbage(tree_, it.distinct_beams, slots_.num_slots());
  model_.compact(plan);
  draft_.compact(plan);
  slots_.apply(plan);
  ++result_.out.decode.metrics.gc_runs;
  rec_.gc(step_ + 1, plan);
}

void DsbdDecoder::draft_forest(Iteration& it) {
  drafted_rows_.clear();
  it.layers.assign(static_cast<size_t>(it.g) + 1, DraftLayer{});
  it.layers[0].nodes = beams_;
  it.in_forest.assign(static_cast<size_t>(tree_.size()), 0);
  for (int32_t b : beams_) it.in_forest[static_cast<size_t>(b)] = 1;
  for (int32_t j = 1; j <= it.g; ++j) {
    const DraftLayer& prev = it.layers[static_cast<size_t>(j - 1)];
    std::vector<int32_t> q_nodes;
    for (int32_t b : prev.nodes)
      if (std::find(q_nodes.begin(), q_nodes.end(), b) == q_nodes.end()) q_nodes.push_back(b);
    json f = df_.feed(tree_, slots_.num_slots(), q_nodes, rec_.on());
    it.draft.draft_forwards_push([&] { return std::move(f); });
    for (int32_t id = 0; id < tree_.size(); ++id)
      if (const double* row = df_.row(id)) drafted_rows_[id].assign(row, row + V_);
    const size_t w = prev.nodes.size();
    std::vector<double> beam_lp(w), token_lp(w * static_cast<size_t>(V_));
    for (size_t i = 0; i < w; ++i) {
      beam_lp[i] = dlp_of(prev.nodes[i]);
      const auto& row = drafted_rows_.at(prev.nodes[i]);
      std::copy(row.begin(), row.end(), token_lp.begin() + static_cast<std::ptrdiff_t>(i) * V_);
    }
    DraftLayer& cur = it.layers[static_cast<size_t>(j)];
    cur.q_full = beam_distribution(beam_lp, token_lp, V_, cfg_.sampling);  // q_beam (Section 3.1)
    std::map<std::pair<int32_t, int32_t>, int32_t> made;
    for (int32_t i = 0; i < cfg_.draft_width; ++i) {
      const int64_t pair = sample_index(cur.q_full, philox_uniform(key_, it.it32, static_cast<uint32_t>(j), 0, static_cast<uint32_t>(i),
                                                                   RandStream::draft_sample));
      const auto pi = static_cast<int32_t>(pair / V_);
      const auto tok = static_cast<int32_t>(pair % V_);
      const int32_t parent = prev.nodes[static_cast<size_t>(pi)];
      auto [mit, fresh] = made.try_emplace({parent, tok}, -1);
      if (fresh) {
        const double dl = beam_lp[static_cast<size_t>(pi)] + token_lp[static_cast<size_t>(pair)];
        mit->second = tree_.add_child(parent, tok, dl);
        tree_.node(mit->second).slot = slots_.allocate();
        grow();
        it.in_forest.resize(static_cast<size_t>(tree_.size()), 0);
        it.in_forest[static_cast<size_t>(mit->second)] = 1;
        node_dlp_[static_cast<size_t>(mit->second)] = dl;
        has_dlp_[static_cast<size_t>(mit->second)] = 1;
        it.draft.added(tree_, mit->second);
      }
      cur.nodes.push_back(mit->second);
      cur.parent.push_back(pi);
    }
    it.draft.push(kDsbdDraftLayersField, [&] {
      DsbdDraftLayer dl{.layer = j, .beams = {}};
      for (size_t i = 0; i < cur.nodes.size(); ++i) {
        const int32_t tok = tree_.node(cur.nodes[i]).token;
        dl.beams.push_back({static_cast<int32_t>(i), cur.nodes[i], cur.parent[i], tok,
                            cur.q_full[static_cast<size_t>(cur.parent[i]) * V_ + static_cast<size_t>(tok)]});
      }
      return dl.to_json();
    });
  }
  // Paper layout (Section 3.3): one cache per input beam holding its whole
  // path, plus its draft tree. Counted at the same moment as ours.
  it.paper = 0;
  for (int32_t b : beams_) it.paper += tree_.node(b).depth + 1;
  for (int32_t id = 0; id < tree_.size(); ++id)
    if (it.in_forest[static_cast<size_t>(id)] && std::find(it.distinct_beams.begin(), it.distinct_beams.end(), id) == it.distinct_beams.end())
      ++it.paper;
  DsbdStats& st = result_.stats;
  st.paper_peak_slots = std::max(st.paper_peak_slots, it.paper);
  it.draft.set("iteration", [&] { return iteration_; });
  it.draft.kv([&] { return kv_record(slots_, bps_, it.paper, static_cast<int32_t>(beams_.size())); });
  rec_.step(++step_, "draft", it.draft, tree_, slots_.num_slots());
}

void DsbdDecoder::score_forest(Iteration& it) {
  const std::vector<int32_t> order = dsbd_forest_order(tree_, beams_, it.in_forest);
  json fwd = tf_.feed(tree_, slots_.num_slots(), order, rec_.on());
  it.verify.forward([&] { return std::move(fwd); });
  it.verify.set("target_logprob", [&] {
    json lp = json::array();
    for (int32_t id : order)
      if (std::find(it.distinct_beams.begin(), it.distinct_beams.end(), id) == it.distinct_beams.end())
        lp.push_back({id, target_row(tree_.node(id).parent)[tree_.node(id).token]});
    return lp;
  });
  for (size_t i = 0; i < beams_.size(); ++i)
    it.accepted.push_back({beams_[i], static_cast<int32_t>(i), node_tlp_[static_cast<size_t>(beams_[i])]});
}

// p_beam^(l) over the accepted parents A (line 12), q_beam^(l) restricted to
// the same parents and renormalised: the surviving drafts are iid draws from
// exactly that distribution (docs/dsbd.md). token_lp: [|A| x V] the parents'
// target rows.
void DsbdDecoder::layer_distributions(const std::vector<Accepted>& A, const DraftLayer& L, std::vector<double>& token_lp,
                                      std::vector<double>& q, std::vector<double>& p) const {
  const size_t na = A.size();
  std::vector<double> beam_lp(na);
  token_lp.assign(na * static_cast<size_t>(V_), 0.0);
  q.assign(na * static_cast<size_t>(V_), 0.0);
  double qmass = 0.0;
  for (size_t k = 0; k < na; ++k) {
    beam_lp[k] = A[k].tlp;
    std::copy_n(target_row(A[k].node), V_, token_lp.begin() + static_cast<std::ptrdiff_t>(k) * V_);
    for (int32_t x = 0; x < V_; ++x)
      qmass += q[k * V_ + static_cast<size_t>(x)] = L.q_full[static_cast<size_t>(A[k].s_idx) * V_ + static_cast<size_t>(x)];
  }
  if (cfg_.renormalize_q)
    for (double& x : q) x /= qmass;
  p = beam_distribution(beam_lp, token_lp, V_, cfg_.sampling);
}

// The decisions of one layer on the tree: tested drafts accepted or
// rejected, the untested rest of a full layer rejected (lines 23-24).
void DsbdDecoder::mark_tested(Iteration& it, const DraftLayer& L, const std::vector<int32_t>& draft_of, const LayerResult& lr) {
  DsbdStats& st = result_.stats;
  std::vector<char> tested(draft_of.size(), 0);
  for (const LayerDecision& d : lr.tested) {
    tested[static_cast<size_t>(d.draft)] = 1;
    ++st.draft_beams_tested;
    st.draft_beams_accepted += d.accepted;
    const int32_t node = L.nodes[static_cast<size_t>(draft_of[static_cast<size_t>(d.draft)])];
    if (d.accepted) set_status(it, node, NodeStatus::accepted);
    else if (tree_.node(node).status != NodeStatus::accepted) set_status(it, node, NodeStatus::rejected);
  }
  for (size_t i = 0; i < draft_of.size(); ++i)
    if (!tested[i]) {
      const int32_t node = L.nodes[static_cast<size_t>(draft_of[i])];
      if (tree_.node(node).status == NodeStatus::live) set_status(it, node, NodeStatus::rejected);
    }
}

bool DsbdDecoder::verify_layer(Iteration& it, int32_t l) {
  DsbdStats& st = result_.stats;
  std::vector<Accepted>& A = it.accepted;
  const DraftLayer& L = it.layers[static_cast<size_t>(l)];
  const size_t prev_w = it.layers[static_cast<size_t>(l - 1)].nodes.size();
  std::vector<int32_t> pos_in_A(prev_w, -1);
  for (size_t k = 0; k < A.size(); ++k) pos_in_A[static_cast<size_t>(A[k].s_idx)] = static_cast<int32_t>(k);
  std::vector<double> token_lp, q, p;
  layer_distributions(A, L, token_lp, q, p);
  std::vector<int64_t> drafts;
  std::vector<int32_t> draft_of;  // surviving draft -> index in L
  std::vector<int32_t> parent_rejected;
  for (size_t i = 0; i < L.nodes.size(); ++i) {
    const int32_t k = pos_in_A[static_cast<size_t>(L.parent[i])];
    if (k < 0) {  // line 10: children of rejected beams are rejected
      if (tree_.node(L.nodes[i]).status == NodeStatus::live) set_status(it, L.nodes[i], NodeStatus::rejected);
      parent_rejected.push_back(L.nodes[i]);
      continue;
    }
    drafts.push_back(int64_t{k} * V_ + tree_.node(L.nodes[i]).token);
    draft_of.push_back(static_cast<int32_t>(i));
  }
  const auto ms = static_cast<int32_t>(drafts.size());
  double predicted = 0.0;
  int32_t width = cfg_.width;
  if (cfg_.dynamic) {
    width = dsbd_width(p, q, ms, cfg_.threshold, cfg_.min_width, cfg_.ratio, &predicted);  // line 14, Eq. 2-7
  } else {
    const auto P = dsbd_accept_count_probs(dsbd_alphas(p, q, ms, cfg_.ratio), ms);
    for (int32_t k = width; k <= ms; ++k) predicted += P[static_cast<size_t>(k)];
  }
  const auto verifier = opt_.verifiers.find<DsbdLayerVerifier>(kVerifyDsbdLayers);
  const LayerResult lr =
      verifier
          ? verifier->verify_layer(p, q, drafts, width, cfg_.ratio, cfg_.sampling.seed, it.it32, static_cast<uint32_t>(l))
          : dsbd_verify_layer(p, q, drafts, width, cfg_.ratio, [&](RandStream s, uint32_t d) {
              return philox_uniform(key_, it.it32, static_cast<uint32_t>(l), 0, d, s);
            });
  ++st.layer_verified[static_cast<size_t>(l - 1)];
  st.predicted_accept_sum += predicted;
  st.width_sum += width;
  if (lr.passed) ++st.layer_accepted[static_cast<size_t>(l - 1)];
  mark_tested(it, L, draft_of, lr);
  const LayerOutcome outcome{L, p, q, draft_of, parent_rejected, lr, width, ms, predicted};
  const size_t first_output = it.outputs.size();
  if (lr.passed) {
    std::vector<Accepted> next;
    for (const LayerDecision& d : lr.tested)
      if (d.accepted) {
        const int32_t li = draft_of[static_cast<size_t>(d.draft)];
        const int32_t node = L.nodes[static_cast<size_t>(li)];
        const size_t k = static_cast<size_t>(d.pair / V_);
        const double tl = A[k].tlp + token_lp[static_cast<size_t>(d.pair)];
        node_tlp_[static_cast<size_t>(node)] = tl;
        tree_.node(node).logprob = tl;
        next.push_back({node, li, tl});
      }
    A = std::move(next);
    record_layer(it, l, outcome, first_output);
    return true;
  }
  // Lines 26-31: the layer is short; accepted drafts plus sampled beams are the output.
  size_t from_draft = 0;
  for (const LayerDecision& d : lr.tested) from_draft += d.accepted;
  for (size_t o = 0; o < lr.outputs.size(); ++o) {
    const int64_t pair = lr.outputs[o];
    const size_t k = static_cast<size_t>(pair / V_);
    const auto tok = static_cast<int32_t>(pair % V_);
    const double tl = A[k].tlp + token_lp[static_cast<size_t>(pair)];
    const int32_t node = child_for(it, A[k].node, tok, tl);
    if (o >= from_draft && tree_.node(node).status != NodeStatus::live) set_status(it, node, NodeStatus::live);
    it.outputs.push_back(node);
  }
  record_layer(it, l, outcome, first_output);
  it.l_last = l;
  return false;
}

void DsbdDecoder::extra_layer(Iteration& it) {
  // Every layer passed: one more layer from p_beam^(g+1).
  const std::vector<Accepted>& A = it.accepted;
  const size_t na = A.size();
  std::vector<double> beam_lp(na), token_lp(na * static_cast<size_t>(V_));
  for (size_t k = 0; k < na; ++k) {
    beam_lp[k] = A[k].tlp;
    std::copy_n(target_row(A[k].node), V_, token_lp.begin() + static_cast<std::ptrdiff_t>(k) * V_);
  }
  const std::vector<double> p = beam_distribution(beam_lp, token_lp, V_, cfg_.sampling);
  const int32_t w = (it.g == 0 || !cfg_.dynamic) ? cfg_.width : static_cast<int32_t>(na);
  std::vector<int64_t> pairs;  // [w] the (beam, token) pairs drawn
  for (int32_t k = 0; k < w; ++k) {
    const int64_t pair = sample_index(p, philox_uniform(key_, it.it32, static_cast<uint32_t>(it.g + 1), 0, static_cast<uint32_t>(k),
                                                        RandStream::target_sample));
    const size_t a = static_cast<size_t>(pair / V_);
    const int32_t node = child_for(it, A[a].node, static_cast<int32_t>(pair % V_), A[a].tlp + token_lp[static_cast<size_t>(pair)]);
    it.outputs.push_back(node);
    pairs.push_back(pair);
  }
  if (!it.verify.on()) return;  // the typed record is built only when recorded
  DsbdExtraLayer& ex = it.verified.extra_layer.emplace(DsbdExtraLayer{.layer = it.g + 1, .width = w, .sampled = {}});
  for (size_t k = 0; k < pairs.size(); ++k)
    ex.sampled.push_back({it.outputs[it.outputs.size() - pairs.size() + k], DsbdSampledFrom::unnamed, p[static_cast<size_t>(pairs[k])]});
}

void DsbdDecoder::choose_outputs(Iteration& it) {
  // Section 3.4: keep only the lowest-perplexity output (equal lengths:
  // the highest target log-likelihood; the first on ties).
  if (cfg_.memory_constrained) {
    size_t best = 0;
    for (size_t i = 1; i < it.outputs.size(); ++i)
      if (node_tlp_[static_cast<size_t>(it.outputs[i])] > node_tlp_[static_cast<size_t>(it.outputs[best])]) best = i;
    it.outputs = {it.outputs[best]};
  }
  // Nodes that lead to no output and were never decided are dead, whichever
  // iteration made them (an earlier output's branch dies when no output of
  // this one descends from it; the next gc frees its slots). Accepted and
  // rejected ones keep the decision the verify record shows.
  std::vector<char> keep(static_cast<size_t>(tree_.size()), 0);
  for (int32_t o : it.outputs)
    for (int32_t a = o; a != kNoNode && !keep[static_cast<size_t>(a)]; a = tree_.node(a).parent) keep[static_cast<size_t>(a)] = 1;
  for (int32_t id = 0; id < tree_.size(); ++id)
    if (!keep[static_cast<size_t>(id)] && tree_.node(id).depth >= n_ && tree_.node(id).status == NodeStatus::live)
      set_status(it, id, NodeStatus::pruned);
  beams_ = it.outputs;
}

// Layer l's entry in verify.layers: its width rule, every draft tested, the
// drafts under rejected parents and (a short layer) the beams sampled after
// the accepted drafts, outputs first_output.. of the iteration.
void DsbdDecoder::record_layer(Iteration& it, int32_t l, const LayerOutcome& o, size_t first_output) {
  if (!it.verify.on()) return;  // the typed record is built only when recorded
  DsbdVerifiedLayer& rec = it.verified.layers.emplace_back(DsbdVerifiedLayer{
      .layer = l, .width = o.width, .surviving_drafts = o.surviving, .predicted_accept = o.predicted, .drafts = {},
      .parent_rejected = o.parent_rejected, .passed = o.result.passed, .sampled = {}});
  for (const LayerDecision& d : o.result.tested) {
    const int32_t li = o.draft_of[static_cast<size_t>(d.draft)];
    rec.drafts.push_back({li, o.layer.nodes[static_cast<size_t>(li)], d.accept_prob, d.u, d.accepted, o.p[static_cast<size_t>(d.pair)],
                          o.q[static_cast<size_t>(d.pair)]});
  }
  if (o.result.passed) return;
  size_t from_draft = 0;
  for (const LayerDecision& d : o.result.tested) from_draft += d.accepted;
  for (size_t k = from_draft; k < o.result.outputs.size(); ++k)
    rec.sampled.push_back({it.outputs[first_output + k], k == from_draft ? DsbdSampledFrom::residual : DsbdSampledFrom::p_beam,
                           o.p[static_cast<size_t>(o.result.outputs[k])]});
}

void DsbdDecoder::record_verify(Iteration& it) {
  StepRecord& ev = it.verify;
  ev.set("iteration", [&] { return iteration_; });
  ev.set("chosen", [&] {
    json chosen = json::array();
    for (size_t i = 0; i < beams_.size(); ++i)
      chosen.push_back({{"beam", i}, {"node", beams_[i]}, {"token", tree_.node(beams_[i]).token}, {"score", node_tlp_[static_cast<size_t>(beams_[i])]}});
    return chosen;
  });
  ev.verify([&] {
    DsbdLayersVerify& v = it.verified;
    v.iteration = iteration_;
    v.gamma = it.g;
    v.steps = it.l_last;
    if (it.l_last <= it.g) v.stopped_at_layer = it.l_last;
    return v.to_json();
  });
  ev.kv([&] { return kv_record(slots_, bps_, it.paper, static_cast<int32_t>(beams_.size())); });
  rec_.step(step_, "verify", ev, tree_, slots_.num_slots());
}

DsbdResult DsbdDecoder::run() {
  const auto t0 = std::chrono::steady_clock::now();
  prompt_check(prompt_, V_, "dsbd");
  TS_CHECK(draft_.vocab_size() == V_, "dsbd: draft vocabulary " << draft_.vocab_size() << " != target vocabulary " << V_);
  TS_CHECK(cfg_.draft_width >= 1 && cfg_.gamma >= 1 && cfg_.width >= 1 && cfg_.min_width >= 1,
           "dsbd: draft_width, gamma, width and min_width must be >= 1");
  TS_CHECK(cfg_.max_new_tokens >= 1, "dsbd: max_new_tokens must be >= 1, got " << cfg_.max_new_tokens);
  TS_CHECK(!cfg_.sampling.deterministic, "dsbd: sampling.deterministic is not supported (verification is stochastic)");
  TS_CHECK(cfg_.threshold >= 0.0 && cfg_.threshold <= 1.0, "dsbd: threshold must be in [0, 1], got " << cfg_.threshold);
  model_.reset();
  draft_.reset();
  DsbdStats& st = result_.stats;
  st.layer_verified.assign(static_cast<size_t>(cfg_.gamma), 0);
  st.layer_accepted.assign(static_cast<size_t>(cfg_.gamma), 0);
  result_.out.decode.metrics.prompt_len = n_;
  record_header(rec_, dsbd_spec(), opt_, model_, [&] { return drafting_config(cfg_.to_json(), prompt_, draft_); });
  prefill();
  int32_t generated = 0;
  while (generated < cfg_.max_new_tokens) {
    Iteration it(rec_);
    it.it32 = static_cast<uint32_t>(++iteration_);
    it.g = std::min(cfg_.gamma, cfg_.max_new_tokens - generated - 1);
    it.l_last = it.g + 1;
    for (int32_t b : beams_)
      if (std::find(it.distinct_beams.begin(), it.distinct_beams.end(), b) == it.distinct_beams.end()) it.distinct_beams.push_back(b);
    if (iteration_ > 1) collect_garbage(it);
    draft_forest(it);
    score_forest(it);
    bool all_passed = true;
    for (int32_t l = 1; l <= it.g && all_passed; ++l) all_passed = verify_layer(it, l);
    if (all_passed) extra_layer(it);
    if (it.g == cfg_.gamma) {
      ++st.full_iterations;
      st.steps_in_full_iterations += it.l_last;
    }
    generated += it.l_last;
    ++st.iterations;
    choose_outputs(it);
    st.shared_peak_slots = slots_.peak();
    ++step_;
    record_verify(it);
  }
  return finish(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

DsbdResult DsbdDecoder::finish(double seconds) {
  SamplingDecodeResult& res = result_.out;
  DsbdStats& st = result_.stats;
  DecodeMetrics& m = res.decode.metrics;
  // Hypotheses: the distinct final beams, highest target log-likelihood first.
  std::vector<int32_t> fin = beams_;
  std::stable_sort(fin.begin(), fin.end(), [&](int32_t a, int32_t b) { return node_tlp_[static_cast<size_t>(a)] > node_tlp_[static_cast<size_t>(b)]; });
  std::vector<int32_t> seen;
  for (int32_t b : fin) {
    if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
    seen.push_back(b);
    Hypothesis h;
    h.tokens = tree_.path_tokens(b);
    h.tokens.erase(h.tokens.begin(), h.tokens.begin() + n_);
    h.sum_logprobs = node_tlp_[static_cast<size_t>(b)];
    h.score = h.sum_logprobs / static_cast<double>(h.tokens.size());
    res.decode.hypotheses.push_back(std::move(h));
  }
  res.sampling.iterations = st.iterations;
  feeder_counts(tf_, df_, res.sampling, m);
  for (int64_t x : st.layer_verified) res.sampling.layers_verified += x;
  for (int64_t x : st.layer_accepted) res.sampling.layers_accepted += x;
  res.sampling.log_likelihood = res.decode.hypotheses.front().sum_logprobs;
  st.shared_peak_slots = slots_.peak();
  m.steps = step_;
  m.final_slots = slots_.num_slots();
  m.peak_slots = slots_.peak();
  m.peak_bytes = m.peak_slots * bps_;
  m.batch_peak_slots = st.paper_peak_slots;
  m.batch_peak_bytes = st.paper_peak_slots * bps_;
  m.output_len = static_cast<int32_t>(res.decode.hypotheses.front().tokens.size());
  m.mem_per_token = mem_per_token(m.peak_bytes, n_, m.output_len);
  m.batch_mem_per_token = mem_per_token(m.batch_peak_bytes, n_, m.output_len);
  m.seconds = seconds;
  auto metrics = [&] {
    json j = res.summary_metrics();
    j["dsbd"] = st.to_json();
    return j;
  };
  record_summary(rec_, [&] { return hypotheses_json(res.decode.hypotheses); }, metrics, m.seconds, &tree_, slots_.num_slots());
  return result_;
}

}  // namespace

DsbdResult dsbd_decode(Model& target, Model& draft, const std::vector<int32_t>& prompt, const DsbdConfig& cfg,
                       TraceSink* trace, const DecodeOptions& opt) {
  return DsbdDecoder(target, draft, prompt, cfg, trace, opt).run();
}

}  // namespace triescope
