#include "core/decode/lookahead.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>

#include "core/common/error.h"
#include "core/common/hash.h"
#include "core/trace/trace_recorder.h"
#include "core/decode/tree_step.h"
#include "core/decode/trie_beam_search.h"
#include "core/kv/kv_cache.h"

namespace triescope {

nlohmann::json LookaheadMetrics::to_json() const {
  return {{"prompt_len", prompt_len},           {"generated", generated},
          {"steps", steps},                     {"computed_tokens", computed_tokens},
          {"computed_decode", computed_decode}, {"verify_tokens", verify_tokens},
          {"lookahead_tokens", lookahead_tokens}, {"accepted_from_candidates", accepted_from_candidates},
          {"peak_slots", peak_slots}};
}

const char* lookahead_verify_name(LookaheadVerify v) {
  switch (v) {
    case LookaheadVerify::greedy_only: return "greedy_only";
    case LookaheadVerify::independent: return "independent";
    case LookaheadVerify::trie: return "trie";
  }
  return "?";
}

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

json kv_json(const KvSlots& slots) { return {{"slots", slots.num_slots()}, {"peak", slots.peak()}}; }

json added_json(const TokenTree& t, const std::vector<int32_t>& nodes) {
  json a = json::array();
  for (int32_t id : nodes) a.push_back(trace_node(t.node(id)));
  return a;
}

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

}  // namespace

LookaheadResult greedy_decode(Model& model, const std::vector<int32_t>& prompt, int32_t max_new_tokens,
                              int32_t eos_token, TraceSink* trace, const DecodeOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = model.vocab_size();
  prompt_check(prompt, V, "greedy decoding");
  TS_CHECK(max_new_tokens >= 1, "greedy decoding: max_new_tokens must be >= 1, got " << max_new_tokens);
  model.reset();
  LookaheadResult res;
  Fed f;
  TraceRecorder rec(trace, opt.keyframe_interval);
  rec.header("greedy", opt.backend, {{"max_new_tokens", max_new_tokens}, {"eos_token", eos_token}, {"prompt", prompt}},
             model.describe(), model.vocab_strings());
  std::vector<int32_t> nodes = f.tree.add_chain(kNoNode, prompt);
  json fwd = feed(model, f, nodes, rec.on());
  if (rec.on()) rec.step(0, "prefill", {{"added", added_json(f.tree, nodes)}, {"forward", fwd}, {"kv", kv_json(f.slots)}}, f.tree, f.slots.num_slots());
  int32_t last = nodes.back(), row = f.logits.rows - 1;
  res.metrics.prompt_len = static_cast<int32_t>(prompt.size());
  for (int32_t step = 1;; ++step) {
    // the argmax runs where verification runs (a lookahead verifier with no candidates)
    const auto verifier = opt.verifiers.find<LookaheadVerifier>(kVerifyLookahead);
    const int32_t tok = verifier ? verifier->verify(f.logits, row, {}, {}, {}).greedy[static_cast<size_t>(row)] : argmax_row(f.logits.row(row), V);
    res.tokens.push_back(tok);
    if (tok == eos_token || static_cast<int32_t>(res.tokens.size()) >= max_new_tokens) break;
    last = f.tree.add_child(last, tok, 0.0);
    fwd = feed(model, f, {last}, rec.on());
    row = 0;
    res.metrics.steps = step;
    if (rec.on())
      rec.step(step, "decode", {{"added", added_json(f.tree, {last})}, {"forward", fwd}, {"kv", kv_json(f.slots)}}, f.tree, f.slots.num_slots());
  }
  auto& m = res.metrics;
  m.generated = static_cast<int32_t>(res.tokens.size());
  m.computed_tokens = f.computed;
  m.computed_decode = f.computed - m.prompt_len;
  m.peak_slots = f.slots.peak();
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) rec.summary({{{"tokens", res.tokens}}}, m.to_json(), m.seconds, f.tree, f.slots.num_slots());
  return res;
}

LookaheadResult lookahead_decode(Model& model, const std::vector<int32_t>& prompt, const LookaheadConfig& cfg,
                                 TraceSink* trace, const DecodeOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t V = model.vocab_size();
  prompt_check(prompt, V, "lookahead decoding");
  TS_CHECK(cfg.max_new_tokens >= 1, "lookahead: max_new_tokens must be >= 1, got " << cfg.max_new_tokens);
  TS_CHECK(cfg.window >= 0 && cfg.ngram >= 2 && cfg.max_candidates >= 0 && cfg.pool_per_key >= 1 &&
               cfg.trie_depth >= 1 && cfg.trie_nodes >= 1,
           "lookahead: need window >= 0, ngram >= 2, candidates >= 0, pool_per_key >= 1, trie depth/nodes >= 1");
  const int32_t N = cfg.ngram, W = cfg.window;
  model.reset();
  LookaheadResult res;
  auto& m = res.metrics;
  m.prompt_len = static_cast<int32_t>(prompt.size());
  Fed f;
  NgramPool pool(cfg.pool_per_key);
  TraceRecorder rec(trace, opt.keyframe_interval);
  if (rec.on()) {
    json c = {{"max_new_tokens", cfg.max_new_tokens}, {"eos_token", cfg.eos_token}, {"window", W}, {"ngram", N},
              {"max_candidates", cfg.max_candidates}, {"pool_per_key", cfg.pool_per_key}, {"trie_depth", cfg.trie_depth},
              {"trie_nodes", cfg.trie_nodes}, {"seed", cfg.seed}, {"verify", lookahead_verify_name(cfg.verify)}, {"prompt", prompt}};
    rec.header("lookahead", opt.backend, c, model.describe(), model.vocab_strings(), kVerifyLookahead);
  }

  std::vector<int32_t> prompt_nodes = f.tree.add_chain(kNoNode, prompt);
  json fwd = feed(model, f, prompt_nodes, rec.on());
  if (rec.on())
    rec.step(0, "prefill", {{"added", added_json(f.tree, prompt_nodes)}, {"forward", fwd}, {"kv", kv_json(f.slots)}}, f.tree,
             f.slots.num_slots());
  int32_t last = prompt_nodes.back();  // the last node whose KV is in the cache
  const int32_t last_row = f.logits.rows - 1;
  const auto verifier = opt.verifiers.find<LookaheadVerifier>(kVerifyLookahead);
  int32_t pending = verifier ? verifier->verify(f.logits, last_row, {}, {}, {}).greedy[static_cast<size_t>(last_row)]
                             : argmax_row(f.logits.row(last_row), V);  // accepted, not yet fed

  // The Jacobi window: guesses for the W positions after the pending token,
  // seeded with prompt tokens (as the official implementation does).
  std::vector<int32_t> window(static_cast<size_t>(W));
  for (int32_t i = 0; i < W; ++i)
    window[static_cast<size_t>(i)] = prompt[splitmix64(cfg.seed ^ static_cast<uint64_t>(i)) % prompt.size()];
  // Trajectory: the last N - 1 window states, each as position -> token.
  std::deque<std::map<int32_t, int32_t>> history;

  res.tokens.push_back(pending);
  bool stop = pending == cfg.eos_token || cfg.max_new_tokens == 1;
  for (int32_t step = 1; !stop; ++step) {
    if (step > 1) {
      // Alg. 1 line 6, KV side: keep the accepted path (the last step's
      // tail), drop the rest in one compaction before this step's pass.
      const CompactionPlan plan = kv_collect_garbage(f.tree, {last}, f.slots.num_slots());
      model.compact(plan);
      f.slots.apply(plan);
      rec.gc(step, plan);
    }
    const int32_t p = f.tree.node(last).depth + 1;  // position of the pending token
    const int32_t root = f.tree.add_child(last, pending, 0.0);
    std::vector<int32_t> fed = {root};
    // Lookahead branch: the window as a chain under the pending token.
    std::vector<int32_t> win_nodes;
    for (int32_t i = 0, parent = root; i < W; ++i) {
      parent = f.tree.add_child(parent, window[static_cast<size_t>(i)], 0.0);
      win_nodes.push_back(parent);
      fed.push_back(parent);
    }
    // Verification branch.
    const auto cands = cfg.verify == LookaheadVerify::greedy_only ? std::vector<std::vector<int32_t>>{}
                                                                  : pool.get(pending, cfg.max_candidates);
    const VerifyBranch branch = add_verify_branch(f.tree, root, cands, cfg);
    const std::vector<int32_t>& cand_nodes = branch.nodes;
    fed.insert(fed.end(), cand_nodes.begin(), cand_nodes.end());
    // Alg. 1 lines 2-4: every node once, parents before children, one forward pass.
    fwd = feed(model, f, fed, rec.on());
    m.lookahead_tokens += W;
    m.verify_tokens += static_cast<int64_t>(cand_nodes.size());
    std::unordered_map<int32_t, int32_t> row_of;
    for (size_t i = 0; i < fed.size(); ++i) row_of[fed[i]] = static_cast<int32_t>(i);
    std::vector<int32_t> matched;  // candidate nodes accepted, in order
    std::function<int32_t(int32_t)> greedy_after;
    std::vector<int32_t> device_greedy;
    if (verifier) {
      // Alg. 1 line 5 where verification runs: every row's greedy token and the path.
      std::vector<int32_t> cand_row, cand_parent, cand_token;
      std::unordered_map<int32_t, int32_t> cand_index;
      for (int32_t nd : cand_nodes) {
        const int32_t par = f.tree.node(nd).parent;
        cand_parent.push_back(par == root ? -1 : cand_index.at(par));
        cand_index[nd] = static_cast<int32_t>(cand_row.size());
        cand_row.push_back(row_of.at(nd));
        cand_token.push_back(f.tree.node(nd).token);
      }
      LookaheadVerifyOutput vo = verifier->verify(f.logits, row_of.at(root), cand_row, cand_parent, cand_token);
      TS_CHECK(vo.greedy.size() == fed.size(), "lookahead: the verifier returned " << vo.greedy.size() << " greedy tokens for " << fed.size() << " rows");
      device_greedy = std::move(vo.greedy);
      for (int32_t c : vo.matched) matched.push_back(cand_nodes.at(static_cast<size_t>(c)));
      greedy_after = [&](int32_t node) { return device_greedy[static_cast<size_t>(row_of.at(node))]; };
    } else {
      greedy_after = [&](int32_t node) { return argmax_row(f.logits.row(row_of.at(node)), V); };
      matched = longest_greedy_path(f.tree, root, branch, cfg.verify, greedy_after);
    }
    std::vector<int32_t> accepted;
    for (int32_t nd : matched) accepted.push_back(f.tree.node(nd).token);
    const int32_t tail = matched.empty() ? root : matched.back();
    accepted.push_back(greedy_after(tail));
    m.accepted_from_candidates += static_cast<int64_t>(matched.size());

    // Jacobi update: predictions for positions p+1 .. p+W+1.
    std::map<int32_t, int32_t> jac;
    jac[p + 1] = greedy_after(root);
    for (int32_t i = 0; i < W; ++i) jac[p + 2 + i] = greedy_after(win_nodes[static_cast<size_t>(i)]);
    std::map<int32_t, int32_t> state;
    for (int32_t i = 0; i < W; ++i) state[p + 1 + i] = window[static_cast<size_t>(i)];
    history.push_back(std::move(state));
    while (static_cast<int32_t>(history.size()) > N - 1) history.pop_front();
    if (static_cast<int32_t>(history.size()) == N - 1) collect_ngrams(history, jac, N, pool);

    // Context update (Alg. 1 line 6): the accepted path is kept; the next step's gc drops the rest.
    for (int32_t nd : fed) f.tree.node(nd).status = NodeStatus::rejected;
    f.tree.node(root).status = NodeStatus::accepted;
    for (int32_t nd : matched) f.tree.node(nd).status = NodeStatus::accepted;
    m.peak_slots = std::max<int64_t>(m.peak_slots, f.slots.num_slots());
    last = tail;
    for (int32_t t : accepted) {
      if (stop) break;
      res.tokens.push_back(t);
      stop = t == cfg.eos_token || static_cast<int32_t>(res.tokens.size()) >= cfg.max_new_tokens;
    }
    pending = accepted.back();
    // The next window starts after the new pending token.
    const int32_t np = p + static_cast<int32_t>(accepted.size());
    for (int32_t i = 0; i < W; ++i) {
      auto it = jac.find(np + 1 + i);
      window[static_cast<size_t>(i)] =
          it != jac.end() ? it->second : window[static_cast<size_t>(std::max(0, W - 1))];
    }
    m.steps = step;
    if (rec.on())
      rec.step(step, "verify",
               {{"added", added_json(f.tree, fed)},
                {"forward", fwd},
                {"verify", {{"kind", kVerifyLookahead}, {"candidates", cands}, {"candidate_nodes", cand_nodes}, {"window_nodes", win_nodes},
                            {"accepted_nodes", matched}, {"accepted_tokens", accepted}}},
                {"kv", kv_json(f.slots)}},
               f.tree, f.slots.num_slots());
  }
  if (static_cast<int32_t>(res.tokens.size()) > cfg.max_new_tokens) res.tokens.resize(static_cast<size_t>(cfg.max_new_tokens));
  m.generated = static_cast<int32_t>(res.tokens.size());
  m.computed_tokens = f.computed;
  m.computed_decode = f.computed - m.prompt_len;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rec.on()) rec.summary({{{"tokens", res.tokens}}}, m.to_json(), m.seconds, f.tree, f.slots.num_slots());
  return res;
}

}  // namespace triescope
