// Verify kind "lookahead_candidates" (lookahead decoding; core/decode/
// lookahead.cpp): one verify step per pass with the n-gram pool's
// candidates, the candidate and Jacobi-window nodes the pass computed and
// the accepted path. Which node computed each candidate token is rebuilt
// from the tree: independent verification gives every candidate its own
// chain, in order; the trie merges equal prefixes and may cut a candidate
// at depth D or after B nodes. The verify object is a
// LookaheadCandidatesVerify (core/trace/lookahead_candidates_verify_record.h).
#include <map>
#include <set>

#include "core/analysis/verify_read.h"
#include "core/decode/lookahead.h"
#include "core/trace/lookahead_candidates_verify_record.h"

namespace triescope {
namespace {

using nlohmann::json;

void read_candidates(const LookaheadCandidatesVerify& ver, VerifyInfo& out) {
  for (const std::vector<int32_t>& tokens : ver.candidates) {
    LookaheadCandidate c;
    c.tokens = tokens;
    c.nodes.assign(c.tokens.size(), -1);
    out.candidates.push_back(std::move(c));
  }
}

// Independent verification: candidate_nodes are the candidates' chains in
// order. False (and no node set) when they are not.
bool nodes_as_chains(const VerifyRead& rd, VerifyInfo& out) {
  size_t at = 0;
  bool chains = true;
  for (auto& c : out.candidates)
    for (size_t i = 0; i < c.tokens.size(); ++i, ++at) {
      const int32_t n = at < out.candidate_nodes.size() ? out.candidate_nodes[at] : -1;
      if (n < 0 || rd.token_of(n) != c.tokens[i] || rd.parent_of(n) != (i == 0 ? out.pending_node : c.nodes[i - 1])) chains = false;
      else c.nodes[i] = n;
    }
  if (!chains)
    for (auto& c : out.candidates) std::fill(c.nodes.begin(), c.nodes.end(), -1);
  return chains;
}

// The trie: each candidate walks the computed children from the pending node.
void nodes_by_trie(const VerifyRead& rd, VerifyInfo& out) {
  std::map<std::pair<int32_t, int32_t>, int32_t> child;  // (parent, token) -> candidate node
  for (int32_t n : out.candidate_nodes) child.emplace(std::make_pair(rd.parent_of(n), rd.token_of(n)), n);
  for (auto& c : out.candidates) {
    int32_t cur = out.pending_node;
    for (size_t i = 0; i < c.tokens.size() && cur >= 0; ++i) {
      auto it = child.find({cur, c.tokens[i]});
      cur = it == child.end() ? -1 : it->second;
      c.nodes[i] = cur;
    }
  }
}

void read_verify(VerifyRead& rd, const LookaheadCandidatesVerify& ver, VerifyInfo& out) {
  const json& cfg = rd.replay.header_record().config;
  if (const auto mode = cfg.find("verify"); mode != cfg.end() && mode->is_string()) out.mode = mode->get<std::string>();
  out.window_nodes = ver.window_nodes;
  out.candidate_nodes = ver.candidate_nodes;
  out.accepted_nodes = ver.accepted_nodes;
  out.accepted_tokens = ver.accepted_tokens;
  if (!out.window_nodes.empty()) out.pending_node = rd.parent_of(out.window_nodes.front());
  else if (!out.candidate_nodes.empty()) out.pending_node = rd.parent_of(out.candidate_nodes.front());
  else if (rd.view.forward && !rd.view.forward->queries.empty()) out.pending_node = rd.view.forward->queries.front();
  read_candidates(ver, out);
  if (out.mode != "independent" || !nodes_as_chains(rd, out)) nodes_by_trie(rd, out);
  const std::set<int32_t> acc(out.accepted_nodes.begin(), out.accepted_nodes.end());
  for (auto& c : out.candidates)
    while (static_cast<size_t>(c.matched) < c.nodes.size() && acc.count(c.nodes[static_cast<size_t>(c.matched)])) ++c.matched;
  out.steps = static_cast<int32_t>(out.accepted_tokens.size());
}

void accumulate(const LookaheadCandidatesVerify& ver, int32_t step, AcceptanceSeries& s) {
  s.per_step.emplace_back(step, static_cast<int32_t>(ver.accepted_tokens.size()));
}

std::string node_label(const VerifyChip& c) { return c.node >= 0 ? "#" + std::to_string(c.node) : std::string("-"); }

VerifyRowChip node_chip(const StepView& v, int32_t node, Decision d) {
  VerifyChip c;
  c.node = node;
  c.token = node >= 0 && static_cast<size_t>(node) < v.nodes.size() ? v.nodes[static_cast<size_t>(node)].token : -1;
  c.decision = d;
  return {c, node_label(c)};
}

VerifyRow candidate_row(const LookaheadCandidate& cand, size_t k, const std::set<int32_t>& acc) {
  VerifyRow r;
  size_t computed = 0;
  for (size_t i = 0; i < cand.tokens.size(); ++i) {
    VerifyChip c;
    c.node = cand.nodes[i];
    c.token = cand.tokens[i];
    c.decision = c.node < 0 ? Decision::not_computed : acc.count(c.node) ? Decision::accepted : Decision::rejected;
    computed += c.node >= 0;
    r.chips.push_back({c, node_label(c)});
  }
  r.head1 = "candidate " + std::to_string(k + 1);
  r.head2 = "matched " + std::to_string(cand.matched) + " of " + std::to_string(cand.tokens.size());
  if (computed < cand.tokens.size()) r.head3 = std::to_string(computed) + " computed";
  r.tag = cand.matched > 0 ? VerifyRowTag::matched : VerifyRowTag::stopped;
  return r;
}

VerifyRow accepted_row(const VerifyInfo& I) {
  VerifyRow r{"accepted this pass", std::to_string(I.accepted_nodes.size()) + " from candidates", "+ 1 greedy token", VerifyRowTag::matched, {}};
  for (size_t i = 0; i < I.accepted_tokens.size(); ++i) {
    VerifyChip c;
    c.token = I.accepted_tokens[i];
    if (i < I.accepted_nodes.size()) {
      c.node = I.accepted_nodes[i];
      c.decision = Decision::accepted;
    } else {
      c.decision = Decision::sampled_target;  // the greedy token after the path: next pass's pending token
    }
    r.chips.push_back({c, c.node >= 0 ? "#" + std::to_string(c.node) : std::string("greedy next")});
  }
  return r;
}

std::vector<VerifyRow> rows(const VerifyInfo& I, const StepView& v) {
  std::vector<VerifyRow> out;
  out.push_back({"pending token", "last accepted, fed now", "", VerifyRowTag::matched, {node_chip(v, I.pending_node, Decision::pending)}});
  VerifyRow win{"lookahead window", "W = " + std::to_string(I.window_nodes.size()) + " Jacobi guesses", "all computed", VerifyRowTag::window, {}};
  for (int32_t n : I.window_nodes) win.chips.push_back(node_chip(v, n, Decision::window));
  out.push_back(std::move(win));
  const std::set<int32_t> acc(I.accepted_nodes.begin(), I.accepted_nodes.end());
  for (size_t k = 0; k < I.candidates.size(); ++k) out.push_back(candidate_row(I.candidates[k], k, acc));
  if (I.candidates.empty()) out.push_back({"no candidates", "the n-gram pool had none", "for this pending token", VerifyRowTag::neutral, {}});
  out.push_back(accepted_row(I));
  return out;
}

std::string summary(const VerifyInfo& I) {
  auto n = [](size_t x) { return std::to_string(x); };
  return "<b>Lookahead pass</b> (" + (I.mode.empty() ? std::string("?") : I.mode) + " verification): pending token + W = " +
         n(I.window_nodes.size()) + " window guesses + " + n(I.candidates.size()) + " candidate(s); <b>" + n(I.candidate_nodes.size()) +
         "</b> candidate node(s) computed (independent chains: " + std::to_string(I.candidate_tokens()) + "). Accepted <b>" +
         n(I.accepted_nodes.size()) + "</b> candidate token(s) + 1 greedy = <b>" + n(I.accepted_tokens.size()) + "</b> token(s) this pass.";
}

// Narration (lookahead decoding): the pending token is fed with the Jacobi
// window and the pool's candidates; the longest candidate prefix that greedy
// decoding agrees with is accepted, plus the greedy token after it.
std::vector<NarrationSentence> narrate(const VerifyInfo& I, const StepView& v, const TraceReplay& r) {
  std::vector<NarrationSentence> out;
  NarrationBuilder pass(v, r, "verify");
  pass.text("Lookahead pass: ");
  if (I.pending_node >= 0) pass.node(I.pending_node).text(" (the pending token, accepted last pass) is fed with ");
  else pass.text("the pending token is fed with ");
  pass.text(std::to_string(I.window_nodes.size()) + " window guesses (Jacobi iteration: computed, never accepted) and " +
            std::to_string(I.candidates.size()) + " candidate n-gram(s) from the pool");
  if (!I.candidates.empty())
    pass.text(", " + std::string(I.mode.empty() ? "" : I.mode + " verification, ") + std::to_string(I.candidate_nodes.size()) +
              " candidate node(s) computed (independent chains would compute " + std::to_string(I.candidate_tokens()) + ")");
  out.push_back(pass.text(".").take());
  NarrationBuilder b(v, r, "verify");
  size_t best = I.candidates.size();
  for (size_t k = 0; k < I.candidates.size(); ++k)
    if (I.candidates[k].matched > 0 && (best == I.candidates.size() || I.candidates[k].matched > I.candidates[best].matched)) best = k;
  if (!I.accepted_nodes.empty()) {
    if (best < I.candidates.size())
      b.text("Candidate " + std::to_string(best + 1) + " matched " + std::to_string(I.candidates[best].matched) + " of its " +
             std::to_string(I.candidates[best].tokens.size()) + " tokens; ");
    b.text("accepted path: ");
    for (size_t i = 0; i < I.accepted_nodes.size(); ++i) b.text(i ? " \u2192 " : "").node(I.accepted_nodes[i]);
  } else {
    b.text(I.candidates.empty() ? "No candidate to verify" : "No candidate matched greedy decoding");
  }
  if (I.accepted_tokens.size() > I.accepted_nodes.size())
    b.text(std::string(I.accepted_nodes.empty() ? "; the pass yields only" : ", then") + " the greedy token '" +
           r.token_text(I.accepted_tokens[I.accepted_nodes.size()]) + "' (the next pending token)");
  b.text(": " + std::to_string(I.accepted_tokens.size()) + " token(s) this pass.");
  out.push_back(b.take());
  return out;
}

VerifyKindSpec spec() {
  VerifyKindSpec k = verify_kind_spec<LookaheadCandidatesVerify>(
      "lookahead decoding: n-gram pool candidates, trie-merged or independent, and the accepted path", read_verify, accumulate, narrate,
      typeid(LookaheadVerifier));
  k.rows = rows;
  k.summary = summary;
  return k;
}

}  // namespace
TRIESCOPE_REGISTER_VERIFY_KIND(spec());
}  // namespace triescope
