#include "core/decode/lookahead.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>

#include "core/common/error.h"
#include "core/common/hash.h"
#include "core/decode/decoder_call.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/decode/tree_step.h"
#include "core/kv/kv_cache.h"
#include "core/trace/lookahead_candidates_verify_record.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

// `seconds` is the summary's own field, not a metric.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LookaheadMetrics, prompt_len, generated, steps, computed_tokens, computed_decode, verify_tokens,
                                   lookahead_tokens, accepted_from_candidates, peak_slots)
nlohmann::json LookaheadMetrics::to_json() const { return *this; }

const char* lookahead_verify_name(LookaheadVerify v) { return enum_name(kLookaheadVerifyNames, v); }

namespace {

// n-gram pool keyed by the first token; most recent continuation first.
class NgramPool {
 public:
  explicit NgramPool(int32_t per_key) : per_key_(per_key) {}
  void add(int32_t key, std::vector<int32_t> cont) {
    auto& d = pool_[key];
    auto it = std::find(d.begin(), d.end(), cont);
    if (it != d.end()) d.erase(it);
    d.push_front(std::move(cont));
    if (static_cast<int32_t>(d.size()) > per_key_) d.pop_back();
  }
  std::vector<std::vector<int32_t>> get(int32_t key, int32_t count) const {
    auto it = pool_.find(key);
    if (it == pool_.end()) return {};
    const size_t n = std::min(it->second.size(), static_cast<size_t>(std::max(0, count)));
    return {it->second.begin(), it->second.begin() + static_cast<std::ptrdiff_t>(n)};
  }

 private:
  int32_t per_key_;
  std::unordered_map<int32_t, std::deque<std::vector<int32_t>>> pool_;
};

struct Fed {
  TokenTree tree;
  KvSlots slots;
  Logits logits;
  int64_t computed = 0;
};

// Adds nodes with fresh slots and feeds them in one forward pass.
json feed(Model& model, Fed& f, const std::vector<int32_t>& nodes, bool want_json) {
  for (int32_t id : nodes) f.tree.node(id).slot = f.slots.allocate();
  const StepInput in = tree_step_input(f.tree, nodes, f.slots.num_slots());
  model.forward(in, f.logits);
  f.computed += static_cast<int64_t>(nodes.size());
  return want_json ? tree_step_json(nodes, in) : json();
}

KvRecord kv_figures(const KvSlots& slots) { return {.slots = slots.num_slots(), .peak = slots.peak()}; }

// The verification branch under the pending token `root` (Alg. 1 line 1):
// independent chains, one per candidate, or the candidates merged into one
// trie within the depth D and the node budget B; none for greedy_only.
struct VerifyBranch {
  std::vector<int32_t> nodes;                // every node, parents before children
  std::vector<std::vector<int32_t>> chains;  // independent mode: the nodes of each candidate
};

VerifyBranch add_verify_branch(TokenTree& tree, int32_t root, const std::vector<std::vector<int32_t>>& cands, const LookaheadConfig& cfg) {
  VerifyBranch b;
  if (cfg.verify == LookaheadVerify::independent) {
    for (const auto& c : cands) {
      b.chains.emplace_back();
      for (int32_t i = 0, parent = root; i < static_cast<int32_t>(c.size()); ++i) {
        parent = tree.add_child(parent, c[static_cast<size_t>(i)], 0.0);
        b.chains.back().push_back(parent);
        b.nodes.push_back(parent);
      }
    }
  } else if (cfg.verify == LookaheadVerify::trie) {
    std::map<std::pair<int32_t, int32_t>, int32_t> child;  // (parent, token) -> node
    for (const auto& c : cands) {
      int32_t parent = root;
      for (int32_t i = 0; i < std::min<int32_t>(cfg.trie_depth, static_cast<int32_t>(c.size())); ++i) {
        auto key = std::make_pair(parent, c[static_cast<size_t>(i)]);
        auto it = child.find(key);
        if (it == child.end()) {
          if (static_cast<int32_t>(b.nodes.size()) >= cfg.trie_nodes) break;
          it = child.emplace(key, tree.add_child(parent, c[static_cast<size_t>(i)], 0.0)).first;
          b.nodes.push_back(it->second);
        }
        parent = it->second;
      }
    }
  }
  return b;
}

// Alg. 1 line 5 on the CPU: the longest path under `root` whose every token is
// the greedy prediction of its parent (the longest matching chain in
// independent mode; one walk down the trie otherwise).
std::vector<int32_t> longest_greedy_path(const TokenTree& tree, int32_t root, const VerifyBranch& branch, LookaheadVerify mode,
                                         const std::function<int32_t(int32_t)>& greedy_after) {
  std::vector<int32_t> matched;
  if (mode == LookaheadVerify::independent) {
    for (const auto& ch : branch.chains) {
      std::vector<int32_t> mm;
      int32_t g = greedy_after(root);
      for (int32_t nd : ch) {
        if (tree.node(nd).token != g) break;
        mm.push_back(nd);
        g = greedy_after(nd);
      }
      if (mm.size() > matched.size()) matched = mm;
    }
    return matched;
  }
  int32_t node = root;
  for (;;) {
    const int32_t g = greedy_after(node);
    int32_t next = kNoNode;
    for (int32_t c : tree.children(node))
      if (tree.node(c).token == g && std::find(branch.nodes.begin(), branch.nodes.end(), c) != branch.nodes.end()) next = c;
    if (next == kNoNode) break;
    matched.push_back(next);
    node = next;
  }
  return matched;
}

// The n-grams along the Jacobi trajectory's diagonal, (L0[q], L1[q+1], ...,
// L_{N-2}[q+N-2], J[q+N-1]), into the pool keyed by their first token.
void collect_ngrams(const std::deque<std::map<int32_t, int32_t>>& history, const std::map<int32_t, int32_t>& jac, int32_t N,
                    NgramPool& pool) {
  for (const auto& [q, key] : history.front()) {
    std::vector<int32_t> cont;
    for (int32_t l = 1; l < N - 1; ++l) {
      auto it = history[static_cast<size_t>(l)].find(q + l);
      if (it == history[static_cast<size_t>(l)].end()) break;
      cont.push_back(it->second);
    }
    auto jt = jac.find(q + N - 1);
    if (static_cast<int32_t>(cont.size()) == N - 2 && jt != jac.end()) {
      cont.push_back(jt->second);
      pool.add(key, std::move(cont));
    }
  }
}


// One step's tree under the pending token: the Jacobi window chain and the
// verification branch, fed in one pass (Alg. 1 lines 1-4).
struct StepTree {
  int32_t p = 0;     // position of the pending token
  int32_t root = 0;  // the pending token's node
  std::vector<int32_t> fed, win_nodes;
  std::vector<std::vector<int32_t>> cands;
  VerifyBranch branch;
  json forward;
};

// What verification (Alg. 1 line 5) found: the accepted candidate nodes and
// every fed node's greedy successor.
struct Verified {
  std::vector<int32_t> matched;  // candidate nodes accepted, in order
  std::function<int32_t(int32_t)> greedy_after;
};

class LookaheadSearch : DecoderCall<LookaheadConfig> {
 public:
  LookaheadSearch(Model& model, const std::vector<int32_t>& prompt, const LookaheadConfig& cfg, TraceSink* trace, const DecodeOptions& opt)
      : DecoderCall(model, prompt, cfg, trace, opt), N_(cfg.ngram), W_(cfg.window), pool_(cfg.pool_per_key) {}

  LookaheadResult run();

 private:
  void check() const;
  void prefill();
  StepTree build_step();
  void verify(const StepTree& st, Verified& v);
  void jacobi_update(const StepTree& st, const Verified& v);
  std::vector<int32_t> accept(const StepTree& st, const Verified& v);
  void record(int32_t step, const StepTree& st, const Verified& v, const std::vector<int32_t>& accepted);

  const int32_t N_, W_;
  LookaheadResult res_;
  Fed f_;
  NgramPool pool_;
  int32_t last_ = kNoNode;  // the last node whose KV is in the cache
  int32_t pending_ = 0;     // accepted, not yet fed
  bool stop_ = false;
  // The Jacobi window: guesses for the W positions after the pending token.
  std::vector<int32_t> window_;
  // Trajectory: the last N - 1 window states, each as position -> token.
  std::deque<std::map<int32_t, int32_t>> history_;
  std::map<int32_t, int32_t> jac_;  // this step's predictions, position -> token
};

void LookaheadSearch::check() const {
  prompt_check(prompt_, V_, "lookahead decoding");
  TS_CHECK(cfg_.max_new_tokens >= 1, "lookahead: max_new_tokens must be >= 1, got " << cfg_.max_new_tokens);
  TS_CHECK(cfg_.window >= 0 && cfg_.ngram >= 2 && cfg_.max_candidates >= 0 && cfg_.pool_per_key >= 1 &&
               cfg_.trie_depth >= 1 && cfg_.trie_nodes >= 1,
           "lookahead: need window >= 0, ngram >= 2, candidates >= 0, pool_per_key >= 1, trie depth/nodes >= 1");
}

void LookaheadSearch::prefill() {
  std::vector<int32_t> prompt_nodes = f_.tree.add_chain(kNoNode, prompt_);
  json fwd = feed(model_, f_, prompt_nodes, rec_.on());
  StepRecord ev(rec_);
  ev.added(f_.tree, prompt_nodes);
  ev.forward([&] { return std::move(fwd); });
  ev.kv([&] { return kv_figures(f_.slots); });
  rec_.step(0, "prefill", ev, f_.tree, f_.slots.num_slots());
  last_ = prompt_nodes.back();
  const int32_t last_row = f_.logits.rows - 1;
  const auto verifier = opt_.verifiers.find<LookaheadVerifier>(kVerifyLookahead);
  pending_ = verifier ? verifier->verify(f_.logits, last_row, {}, {}, {}).greedy[static_cast<size_t>(last_row)] : argmax_row(f_.logits.row(last_row), V_);
  // The window is seeded with prompt tokens (as the official implementation does).
  window_.resize(static_cast<size_t>(W_));
  for (int32_t i = 0; i < W_; ++i)
    window_[static_cast<size_t>(i)] = prompt_[splitmix64(cfg_.seed ^ static_cast<uint64_t>(i)) % prompt_.size()];
}

StepTree LookaheadSearch::build_step() {
  StepTree st;
  st.p = f_.tree.node(last_).depth + 1;
  st.root = f_.tree.add_child(last_, pending_, 0.0);
  st.fed = {st.root};
  // Lookahead branch: the window as a chain under the pending token.
  for (int32_t i = 0, parent = st.root; i < W_; ++i) {
    parent = f_.tree.add_child(parent, window_[static_cast<size_t>(i)], 0.0);
    st.win_nodes.push_back(parent);
    st.fed.push_back(parent);
  }
  if (cfg_.verify != LookaheadVerify::greedy_only) st.cands = pool_.get(pending_, cfg_.max_candidates);
  st.branch = add_verify_branch(f_.tree, st.root, st.cands, cfg_);
  st.fed.insert(st.fed.end(), st.branch.nodes.begin(), st.branch.nodes.end());
  // Alg. 1 lines 2-4: every node once, parents before children, one forward pass.
  st.forward = feed(model_, f_, st.fed, rec_.on());
  res_.metrics.lookahead_tokens += W_;
  res_.metrics.verify_tokens += static_cast<int64_t>(st.branch.nodes.size());
  return st;
}

void LookaheadSearch::verify(const StepTree& st, Verified& v) {
  const std::vector<int32_t>& fed = st.fed;
  const std::vector<int32_t>& cand_nodes = st.branch.nodes;
  const int32_t root = st.root;
  auto row_of = std::make_shared<std::unordered_map<int32_t, int32_t>>();
  for (size_t i = 0; i < fed.size(); ++i) (*row_of)[fed[i]] = static_cast<int32_t>(i);
  std::vector<int32_t>& matched = v.matched;
  if (const auto verifier = opt_.verifiers.find<LookaheadVerifier>(kVerifyLookahead)) {
    // Alg. 1 line 5 where verification runs: every row's greedy token and the path.
    std::vector<int32_t> cand_row, cand_parent, cand_token;
    std::unordered_map<int32_t, int32_t> cand_index;
    for (int32_t nd : cand_nodes) {
      const int32_t par = f_.tree.node(nd).parent;
      cand_parent.push_back(par == root ? -1 : cand_index.at(par));
      cand_index[nd] = static_cast<int32_t>(cand_row.size());
      cand_row.push_back(row_of->at(nd));
      cand_token.push_back(f_.tree.node(nd).token);
    }
    LookaheadVerifyOutput vo = verifier->verify(f_.logits, row_of->at(root), cand_row, cand_parent, cand_token);
    TS_CHECK(vo.greedy.size() == fed.size(), "lookahead: the verifier returned " << vo.greedy.size() << " greedy tokens for " << fed.size() << " rows");
    auto device_greedy = std::make_shared<std::vector<int32_t>>(std::move(vo.greedy));
    for (int32_t c : vo.matched) matched.push_back(cand_nodes.at(static_cast<size_t>(c)));
    v.greedy_after = [device_greedy, row_of](int32_t node) { return (*device_greedy)[static_cast<size_t>(row_of->at(node))]; };
  } else {
    v.greedy_after = [this, row_of](int32_t node) { return argmax_row(f_.logits.row(row_of->at(node)), V_); };
    matched = longest_greedy_path(f_.tree, root, st.branch, cfg_.verify, v.greedy_after);
  }
}

// The predictions for positions p+1 .. p+W+1 join the trajectory; its
// diagonal n-grams join the pool.
void LookaheadSearch::jacobi_update(const StepTree& st, const Verified& v) {
  jac_.clear();
  jac_[st.p + 1] = v.greedy_after(st.root);
  for (int32_t i = 0; i < W_; ++i) jac_[st.p + 2 + i] = v.greedy_after(st.win_nodes[static_cast<size_t>(i)]);
  std::map<int32_t, int32_t> state;
  for (int32_t i = 0; i < W_; ++i) state[st.p + 1 + i] = window_[static_cast<size_t>(i)];
  history_.push_back(std::move(state));
  while (static_cast<int32_t>(history_.size()) > N_ - 1) history_.pop_front();
  if (static_cast<int32_t>(history_.size()) == N_ - 1) collect_ngrams(history_, jac_, N_, pool_);
}

// Context update (Alg. 1 line 6): the accepted path is kept (the next step's
// gc drops the rest), its tokens are output, and the window moves on.
std::vector<int32_t> LookaheadSearch::accept(const StepTree& st, const Verified& v) {
  std::vector<int32_t> accepted;
  for (int32_t nd : v.matched) accepted.push_back(f_.tree.node(nd).token);
  const int32_t tail = v.matched.empty() ? st.root : v.matched.back();
  accepted.push_back(v.greedy_after(tail));
  res_.metrics.accepted_from_candidates += static_cast<int64_t>(v.matched.size());
  jacobi_update(st, v);
  for (int32_t nd : st.fed) f_.tree.node(nd).status = NodeStatus::rejected;
  f_.tree.node(st.root).status = NodeStatus::accepted;
  for (int32_t nd : v.matched) f_.tree.node(nd).status = NodeStatus::accepted;
  res_.metrics.peak_slots = std::max<int64_t>(res_.metrics.peak_slots, f_.slots.num_slots());
  last_ = tail;
  for (int32_t t : accepted) {
    if (stop_) break;
    res_.tokens.push_back(t);
    stop_ = t == cfg_.eos_token || static_cast<int32_t>(res_.tokens.size()) >= cfg_.max_new_tokens;
  }
  pending_ = accepted.back();
  // The next window starts after the new pending token.
  const int32_t np = st.p + static_cast<int32_t>(accepted.size());
  for (int32_t i = 0; i < W_; ++i) {
    auto it = jac_.find(np + 1 + i);
    window_[static_cast<size_t>(i)] = it != jac_.end() ? it->second : window_[static_cast<size_t>(std::max(0, W_ - 1))];
  }
  return accepted;
}

void LookaheadSearch::record(int32_t step, const StepTree& st, const Verified& v, const std::vector<int32_t>& accepted) {
  StepRecord ev(rec_);
  ev.added(f_.tree, st.fed);
  ev.forward([&] { return st.forward; });
  ev.verify([&] {
    return LookaheadCandidatesVerify{.candidates = st.cands,
                                     .candidate_nodes = st.branch.nodes,
                                     .window_nodes = st.win_nodes,
                                     .accepted_nodes = v.matched,
                                     .accepted_tokens = accepted}
        .to_json();
  });
  ev.kv([&] { return kv_figures(f_.slots); });
  rec_.step(step, "verify", ev, f_.tree, f_.slots.num_slots());
}

LookaheadResult LookaheadSearch::run() {
  const auto t0 = std::chrono::steady_clock::now();
  check();
  model_.reset();
  auto& m = res_.metrics;
  m.prompt_len = static_cast<int32_t>(prompt_.size());
  record_header(rec_, lookahead_spec(), opt_, model_, [&] {
    return json{{"max_new_tokens", cfg_.max_new_tokens}, {"eos_token", cfg_.eos_token}, {"window", W_}, {"ngram", N_},
                {"max_candidates", cfg_.max_candidates}, {"pool_per_key", cfg_.pool_per_key}, {"trie_depth", cfg_.trie_depth},
                {"trie_nodes", cfg_.trie_nodes}, {"seed", cfg_.seed}, {"verify", lookahead_verify_name(cfg_.verify)}, {"prompt", prompt_}};
  });
  prefill();
  res_.tokens.push_back(pending_);
  stop_ = pending_ == cfg_.eos_token || cfg_.max_new_tokens == 1;
  for (int32_t step = 1; !stop_; ++step) {
    if (step > 1) {
      // Alg. 1 line 6, KV side: keep the accepted path (the last step's
      // tail), drop the rest in one compaction before this step's pass.
      const CompactionPlan plan = kv_collect_garbage(f_.tree, {last_}, f_.slots.num_slots());
      model_.compact(plan);
      f_.slots.apply(plan);
      rec_.gc(step, plan);
    }
    const StepTree st = build_step();
    Verified v;
    verify(st, v);
    const std::vector<int32_t> accepted = accept(st, v);
    m.steps = step;
    record(step, st, v, accepted);
  }
  if (static_cast<int32_t>(res_.tokens.size()) > cfg_.max_new_tokens) res_.tokens.resize(static_cast<size_t>(cfg_.max_new_tokens));
  m.generated = static_cast<int32_t>(res_.tokens.size());
  m.computed_tokens = f_.computed;
  m.computed_decode = f_.computed - m.prompt_len;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec_, [&] { return sequences_json({res_.tokens}); }, [&] { return m.to_json(); }, m.seconds, &f_.tree, f_.slots.num_slots());
  return res_;
}

}  // namespace

LookaheadResult lookahead_decode(Model& model, const std::vector<int32_t>& prompt, const LookaheadConfig& cfg,
                                 TraceSink* trace, const DecodeOptions& opt) {
  return LookaheadSearch(model, prompt, cfg, trace, opt).run();
}

}  // namespace triescope
