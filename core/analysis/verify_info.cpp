#include "core/analysis/verify_info.h"

#include "core/config/json_reader.h"
#include "core/trace/trace.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>

namespace triescope {

using nlohmann::json;

const char* decision_name(Decision d) {
  switch (d) {
    case Decision::drafted: return "drafted";
    case Decision::accepted: return "accepted";
    case Decision::rejected: return "rejected";
    case Decision::untested: return "rejected untested";
    case Decision::parent_rejected: return "parent rejected";
    case Decision::not_verified: return "not verified";
    case Decision::sampled_residual: return "sampled (residual)";
    case Decision::sampled_target: return "sampled (target)";
    case Decision::window: return "window (Jacobi guess)";
    case Decision::pending: return "pending token";
    case Decision::not_computed: return "not computed";
  }
  return "?";
}

int32_t VerifyLayer::count(Decision d) const {
  return static_cast<int32_t>(std::count_if(chips.begin(), chips.end(), [d](const VerifyChip& c) { return c.decision == d; }));
}

int32_t VerifyInfo::total(Decision d) const {
  int32_t n = 0;
  for (const auto& l : layers) n += l.count(d);
  return n;
}

int32_t VerifyInfo::candidate_tokens() const {
  int32_t n = 0;
  for (const auto& c : candidates) n += static_cast<int32_t>(c.tokens.size());
  return n;
}

namespace {

// Field access that records the first malformed field instead of throwing:
// the pane shows what it could read and names what it could not.
struct Rd {
  std::string& err;
  std::string where;  // "step 4: verify"
  void bad(const std::string& path, const char* what) {
    if (err.empty()) err = where + ": " + path + ": " + what;
  }
  int32_t i(const json& o, const char* k, const std::string& path, int32_t dflt = -1) {
    if (!o.is_object() || !o.contains(k)) return dflt;
    if (!o[k].is_number_integer()) {
      bad(path + "." + k, "expected an integer");
      return dflt;
    }
    const auto x = json_int_in(o[k], INT32_MIN, INT32_MAX);
    if (!x) {
      bad(path + "." + k, "expected a 32-bit integer");
      return dflt;
    }
    return static_cast<int32_t>(*x);
  }
  double d(const json& o, const char* k, const std::string& path) {
    if (!o.is_object() || !o.contains(k) || o[k].is_null()) return VerifyChip::kNone;
    if (!o[k].is_number()) {
      bad(path + "." + k, "expected a number");
      return VerifyChip::kNone;
    }
    return o[k].get<double>();
  }
  bool b(const json& o, const char* k, const std::string& path) {
    if (!o.is_object() || !o.contains(k)) return false;
    if (!o[k].is_boolean()) {
      bad(path + "." + k, "expected true or false");
      return false;
    }
    return o[k].get<bool>();
  }
  const json& arr(const json& o, const char* k, const std::string& path) {
    static const json empty = json::array();
    if (!o.is_object() || !o.contains(k) || o[k].is_null()) return empty;
    if (!o[k].is_array()) {
      bad(path + "." + k, "expected an array");
      return empty;
    }
    return o[k];
  }
  std::vector<int32_t> ints(const json& o, const char* k, const std::string& path) {
    std::vector<int32_t> out;
    const json& a = arr(o, k, path);
    for (size_t j = 0; j < a.size(); ++j) {
      if (!a[j].is_number_integer()) {
        bad(path + "." + k + "[" + std::to_string(j) + "]", "expected an integer");
        continue;
      }
      const auto x = json_int_in(a[j], INT32_MIN, INT32_MAX);
      if (!x) {
        bad(path + "." + k + "[" + std::to_string(j) + "]", "expected a 32-bit integer");
        continue;
      }
      out.push_back(static_cast<int32_t>(*x));
    }
    return out;
  }
};

// The step record of `step`, read from the trace (in memory or streamed);
// the index is in step order apart from the header and the summary.
std::optional<json> step_record(const TraceReplay& replay, int32_t step) {
  const auto& entries = replay.entries();
  size_t lo = 0, hi = entries.size();
  while (lo < hi && entries[lo].step < 0) ++lo;
  while (hi > lo && entries[hi - 1].step < 0) --hi;
  auto it = std::lower_bound(entries.begin() + static_cast<std::ptrdiff_t>(lo), entries.begin() + static_cast<std::ptrdiff_t>(hi), step,
                             [](const TraceRecordEntry& e, int32_t s) { return e.step < s; });
  for (; it != entries.begin() + static_cast<std::ptrdiff_t>(hi) && it->step == step; ++it)
    if (it->kind == TraceRecordKind::step) {
      json scratch;
      const json& r = replay.records_view().at(static_cast<size_t>(it - entries.begin()), scratch);
      if (&r == &scratch) return scratch;
      return r;
    }
  return std::nullopt;
}

int32_t token_of(const StepView& v, int32_t node) {
  return node >= 0 && static_cast<size_t>(node) < v.nodes.size() ? v.nodes[static_cast<size_t>(node)].token : -1;
}

VerifyChip chip(const StepView& v, int32_t node, Decision d) {
  VerifyChip c;
  c.node = node;
  c.token = token_of(v, node);
  c.decision = d;
  return c;
}

void dsbd_draft(const StepView& v, const json& layers, Rd& rd, VerifyInfo& out) {
  for (size_t k = 0; k < layers.size(); ++k) {
    const std::string path = "draft_layers[" + std::to_string(k) + "]";
    VerifyLayer L;
    L.layer = rd.i(layers[k], "layer", path, static_cast<int32_t>(k) + 1);
    L.verified = false;
    const json& beams = rd.arr(layers[k], "beams", path);
    for (size_t j = 0; j < beams.size(); ++j) {
      const std::string bp = path + ".beams[" + std::to_string(j) + "]";
      VerifyChip c = chip(v, rd.i(beams[j], "node", bp), Decision::drafted);
      c.beam = rd.i(beams[j], "beam", bp, static_cast<int32_t>(j));
      c.parent_beam = rd.i(beams[j], "parent_beam", bp);
      if (c.token < 0) c.token = rd.i(beams[j], "token", bp);
      c.q = rd.d(beams[j], "q_beam", bp);
      L.chips.push_back(c);
    }
    out.layers.push_back(std::move(L));
  }
}

void dsbd_verify(const StepView& v, const json& ver, const json* draft, Rd& rd, VerifyInfo& out) {
  out.iteration = rd.i(ver, "iteration", "verify");
  out.gamma = rd.i(ver, "gamma", "verify");
  out.steps = rd.i(ver, "steps", "verify");
  if (ver.contains("stopped_at_layer") && !ver["stopped_at_layer"].is_null()) out.stopped_at_layer = rd.i(ver, "stopped_at_layer", "verify", 0);
  const json& vlayers = rd.arr(ver, "layers", "verify");
  std::map<int32_t, size_t> vl_of;  // layer -> index in verify.layers
  for (size_t k = 0; k < vlayers.size(); ++k) vl_of[rd.i(vlayers[k], "layer", "verify.layers[" + std::to_string(k) + "]", static_cast<int32_t>(k) + 1)] = k;
  // The iteration's draft beams per layer (from the draft record), so the
  // drafts that were never tested are shown too.
  std::map<int32_t, const json*> drafted;
  static const json none = json::array();
  const json& dl = draft ? rd.arr(*draft, "draft_layers", "draft") : none;
  for (size_t k = 0; k < dl.size(); ++k) drafted[rd.i(dl[k], "layer", "draft.draft_layers[" + std::to_string(k) + "]", static_cast<int32_t>(k) + 1)] = &dl[k];
  int32_t last = out.gamma;
  if (!drafted.empty()) last = std::max(last, drafted.rbegin()->first);
  if (!vl_of.empty()) last = std::max(last, vl_of.rbegin()->first);
  for (int32_t l = 1; l <= last; ++l) {
    VerifyLayer L;
    L.layer = l;
    const auto vit = vl_of.find(l);
    const json* vl = vit == vl_of.end() ? nullptr : &vlayers[vit->second];
    const std::string vp = vit == vl_of.end() ? std::string() : "verify.layers[" + std::to_string(vit->second) + "]";
    L.verified = vl != nullptr;
    std::map<int32_t, const json*> tested;  // beam -> drafts[] entry
    std::set<int32_t> parent_rej;
    if (vl) {
      L.width = rd.i(*vl, "width", vp);
      L.surviving = rd.i(*vl, "surviving_drafts", vp);
      L.predicted = rd.d(*vl, "predicted_accept", vp);
      L.passed = rd.b(*vl, "passed", vp);
      const json& ds = rd.arr(*vl, "drafts", vp);
      for (size_t j = 0; j < ds.size(); ++j) tested[rd.i(ds[j], "beam", vp + ".drafts[" + std::to_string(j) + "]", -1 - static_cast<int32_t>(j))] = &ds[j];
      for (int32_t n : rd.ints(*vl, "parent_rejected", vp)) parent_rej.insert(n);
    }
    auto decided = [&](VerifyChip& c, const json& d, const std::string& dp) {
      c.accept_prob = rd.d(d, "accept_prob", dp);
      c.u = rd.d(d, "u", dp);
      c.p = rd.d(d, "p", dp);
      c.q = rd.d(d, "q", dp);
      c.decision = rd.b(d, "accepted", dp) ? Decision::accepted : Decision::rejected;
    };
    std::set<int32_t> shown_beams;
    if (auto dit = drafted.find(l); dit != drafted.end()) {
      const json& beams = rd.arr(*dit->second, "beams", "draft.draft_layers");
      for (size_t j = 0; j < beams.size(); ++j) {
        const std::string bp = "draft.draft_layers[" + std::to_string(l - 1) + "].beams[" + std::to_string(j) + "]";
        VerifyChip c = chip(v, rd.i(beams[j], "node", bp), Decision::not_verified);
        c.beam = rd.i(beams[j], "beam", bp, static_cast<int32_t>(j));
        c.parent_beam = rd.i(beams[j], "parent_beam", bp);
        c.q = rd.d(beams[j], "q_beam", bp);
        if (vl) {
          if (auto t = tested.find(c.beam); t != tested.end()) decided(c, *t->second, vp + ".drafts");
          else c.decision = parent_rej.count(c.node) ? Decision::parent_rejected : Decision::untested;
        }
        shown_beams.insert(c.beam);
        L.chips.push_back(c);
      }
    }
    // Without the draft record (or for beams it lacks): the tested drafts
    // and the parent-rejected nodes as the verify record has them.
    for (const auto& [beam, d] : tested)
      if (!shown_beams.count(beam)) {
        VerifyChip c = chip(v, rd.i(*d, "node", vp + ".drafts"), Decision::accepted);
        c.beam = beam;
        decided(c, *d, vp + ".drafts");
        L.chips.push_back(c);
      }
    if (drafted.find(l) == drafted.end())
      for (int32_t n : parent_rej) L.chips.push_back(chip(v, n, Decision::parent_rejected));
    if (vl) {
      const json& sm = rd.arr(*vl, "sampled", vp);
      for (size_t j = 0; j < sm.size(); ++j) {
        const std::string sp = vp + ".sampled[" + std::to_string(j) + "]";
        const std::string from = sm[j].is_object() && sm[j].contains("from") && sm[j]["from"].is_string() ? sm[j]["from"].get<std::string>() : std::string();
        VerifyChip c = chip(v, rd.i(sm[j], "node", sp), from == "residual" ? Decision::sampled_residual : Decision::sampled_target);
        c.prob = rd.d(sm[j], "prob", sp);
        L.chips.push_back(c);
      }
    }
    out.layers.push_back(std::move(L));
  }
  if (ver.contains("extra_layer") && ver["extra_layer"].is_object()) {
    const json& ex = ver["extra_layer"];
    VerifyLayer L;
    L.extra = true;
    L.passed = true;
    L.layer = rd.i(ex, "layer", "verify.extra_layer", last + 1);
    L.width = rd.i(ex, "width", "verify.extra_layer");
    const json& sm = rd.arr(ex, "sampled", "verify.extra_layer");
    for (size_t j = 0; j < sm.size(); ++j) {
      VerifyChip c = chip(v, rd.i(sm[j], "node", "verify.extra_layer.sampled"), Decision::sampled_target);
      c.prob = rd.d(sm[j], "prob", "verify.extra_layer.sampled");
      L.chips.push_back(c);
    }
    out.layers.push_back(std::move(L));
  }
}

// Speculative decoding: the draft chain is the draft record's added nodes in
// order (one per layer); decisions[] has the tested layers.
void spec_verify(const StepView& v, const json& ver, const json* draft, Rd& rd, VerifyInfo& out) {
  out.iteration = rd.i(ver, "iteration", "verify");
  out.steps = rd.i(ver, "steps", "verify");
  const int32_t accepted = rd.i(ver, "accepted", "verify", 0);
  std::vector<int32_t> chain;
  if (draft) {
    const json& added = rd.arr(*draft, "added", "draft");
    for (size_t j = 0; j < added.size(); ++j) chain.push_back(rd.i(added[j], "id", "draft.added[" + std::to_string(j) + "]"));
  }
  const json& dec = rd.arr(ver, "decisions", "verify");
  std::map<int32_t, const json*> by_layer;
  for (size_t j = 0; j < dec.size(); ++j) by_layer[rd.i(dec[j], "layer", "verify.decisions[" + std::to_string(j) + "]", static_cast<int32_t>(j) + 1)] = &dec[j];
  const int32_t g = std::max<int32_t>(static_cast<int32_t>(chain.size()), by_layer.empty() ? 0 : by_layer.rbegin()->first);
  out.gamma = g;
  for (int32_t l = 1; l <= g; ++l) {
    VerifyLayer L;
    L.layer = l;
    L.width = 1;
    auto it = by_layer.find(l);
    L.verified = it != by_layer.end();
    VerifyChip c = chip(v, static_cast<size_t>(l - 1) < chain.size() ? chain[static_cast<size_t>(l - 1)] : -1, Decision::untested);
    if (it != by_layer.end()) {
      const std::string dp = "verify.decisions";
      if (c.node < 0) c = chip(v, rd.i(*it->second, "node", dp), Decision::untested);
      c.accept_prob = rd.d(*it->second, "accept_prob", dp);
      c.u = rd.d(*it->second, "u", dp);
      c.decision = rd.b(*it->second, "accepted", dp) ? Decision::accepted : Decision::rejected;
      L.passed = c.decision == Decision::accepted;
    }
    L.chips.push_back(c);
    out.layers.push_back(std::move(L));
  }
  // The verify step adds one node: from the residual after a rejection, or
  // the bonus token from p when every draft was accepted.
  for (int32_t n : v.added) {
    if (accepted < g && static_cast<size_t>(accepted) < out.layers.size()) {
      out.stopped_at_layer = accepted + 1;
      out.layers[static_cast<size_t>(accepted)].chips.push_back(chip(v, n, Decision::sampled_residual));
    } else {
      VerifyLayer L;
      L.layer = g + 1;
      L.extra = true;
      L.passed = true;
      L.width = 1;
      L.chips.push_back(chip(v, n, Decision::sampled_target));
      out.layers.push_back(std::move(L));
    }
  }
}

void lookahead(const StepView& v, const TraceReplay& replay, const json& ver, Rd& rd, VerifyInfo& out) {
  const json& h = replay.header();
  if (h.contains("config") && h["config"].is_object() && h["config"].contains("verify") && h["config"]["verify"].is_string())
    out.mode = h["config"]["verify"].get<std::string>();
  out.window_nodes = rd.ints(ver, "window_nodes", "verify");
  out.candidate_nodes = rd.ints(ver, "candidate_nodes", "verify");
  out.accepted_nodes = rd.ints(ver, "accepted_nodes", "verify");
  out.accepted_tokens = rd.ints(ver, "accepted_tokens", "verify");
  auto parent = [&](int32_t n) { return n >= 0 && static_cast<size_t>(n) < v.nodes.size() ? v.nodes[static_cast<size_t>(n)].parent : -1; };
  if (!out.window_nodes.empty()) out.pending_node = parent(out.window_nodes.front());
  else if (!out.candidate_nodes.empty()) out.pending_node = parent(out.candidate_nodes.front());
  else if (v.forward && !v.forward->queries.empty()) out.pending_node = v.forward->queries.front();
  const json& cands = rd.arr(ver, "candidates", "verify");
  for (size_t k = 0; k < cands.size(); ++k) {
    LookaheadCandidate c;
    if (!cands[k].is_array()) {
      rd.bad("verify.candidates[" + std::to_string(k) + "]", "expected an array of token ids");
      continue;
    }
    for (const json& t : cands[k]) c.tokens.push_back(t.is_number_integer() ? t.get<int32_t>() : -1);
    c.nodes.assign(c.tokens.size(), -1);
    out.candidates.push_back(std::move(c));
  }
  // Which node computed each candidate token. Independent verification gives
  // every candidate its own chain, in order; the trie merges equal prefixes
  // and may cut a candidate at depth D or after B nodes.
  bool chains = out.mode == "independent";
  if (chains) {
    size_t at = 0;
    for (auto& c : out.candidates)
      for (size_t i = 0; i < c.tokens.size(); ++i, ++at) {
        const int32_t n = at < out.candidate_nodes.size() ? out.candidate_nodes[at] : -1;
        if (n < 0 || token_of(v, n) != c.tokens[i] || parent(n) != (i == 0 ? out.pending_node : c.nodes[i - 1])) chains = false;
        else c.nodes[i] = n;
      }
    if (!chains)
      for (auto& c : out.candidates) std::fill(c.nodes.begin(), c.nodes.end(), -1);
  }
  if (!chains) {
    std::map<std::pair<int32_t, int32_t>, int32_t> child;  // (parent, token) -> candidate node
    for (int32_t n : out.candidate_nodes) child.emplace(std::make_pair(parent(n), token_of(v, n)), n);
    for (auto& c : out.candidates) {
      int32_t cur = out.pending_node;
      for (size_t i = 0; i < c.tokens.size() && cur >= 0; ++i) {
        auto it = child.find({cur, c.tokens[i]});
        cur = it == child.end() ? -1 : it->second;
        c.nodes[i] = cur;
      }
    }
  }
  const std::set<int32_t> acc(out.accepted_nodes.begin(), out.accepted_nodes.end());
  for (auto& c : out.candidates)
    while (static_cast<size_t>(c.matched) < c.nodes.size() && acc.count(c.nodes[static_cast<size_t>(c.matched)])) ++c.matched;
  out.steps = static_cast<int32_t>(out.accepted_tokens.size());
}

}  // namespace

VerifyInfo verify_info(const StepView& v, const TraceReplay& replay) {
  VerifyInfo out;
  Rd rd{out.error, "step " + std::to_string(v.step)};
  const json& x = v.extra;
  if (!x.is_object()) return out;
  const std::string kind = trace_verify_kind(replay.header());
  if (v.phase == "draft") {
    const std::optional<json> next = step_record(replay, v.step + 1);
    if (next && next->value("phase", "") == "verify") out.verify_step = v.step + 1;
    out.iteration = rd.i(x, "iteration", "draft");
    if (kind == kVerifyDsbdLayers) {
      out.kind = VerifyInfo::Kind::dsbd_draft;
      dsbd_draft(v, rd.arr(x, "draft_layers", "draft"), rd, out);
      out.gamma = static_cast<int32_t>(out.layers.size());
    } else {
      out.kind = VerifyInfo::Kind::spec_draft;
      int32_t l = 0;
      for (int32_t n : v.added) {
        VerifyLayer L;
        L.layer = ++l;
        L.verified = false;
        L.width = 1;
        L.chips.push_back(chip(v, n, Decision::drafted));
        out.layers.push_back(std::move(L));
      }
      out.gamma = l;
    }
    return out;
  }
  if (!x.contains("verify")) return out;
  const json& ver = x["verify"];
  if (!ver.is_object()) {
    rd.bad("verify", "expected an object");
    out.kind = VerifyInfo::Kind::dsbd_verify;
    return out;
  }
  const std::optional<json> draft_record = step_record(replay, v.step - 1);
  const json* draft = draft_record && draft_record->value("phase", "") == "draft" ? &*draft_record : nullptr;
  // v2: the record names its kind; v1: the header's algorithm does (trace_verify_kind).
  const std::string vk = ver.contains("kind") ? (ver["kind"].is_string() ? ver["kind"].get<std::string>() : std::string("?")) : kind;
  if (vk == kVerifyLookahead) {
    out.kind = VerifyInfo::Kind::lookahead;
    lookahead(v, replay, ver, rd, out);
  } else if (vk == kVerifySpeculativeChain) {
    out.kind = VerifyInfo::Kind::spec_verify;
    spec_verify(v, ver, draft, rd, out);
  } else if (vk == kVerifyDsbdLayers) {
    out.kind = VerifyInfo::Kind::dsbd_verify;
    dsbd_verify(v, ver, draft, rd, out);
  } else {
    rd.bad("verify.kind", ("unknown verification kind \"" + vk + "\"").c_str());
  }
  return out;
}

AcceptanceSeries acceptance_series(const TraceReplay& replay) {
  AcceptanceSeries s;
  auto layer = [&](int32_t l) -> LayerAcceptance& {
    if (l < 1) l = 1;
    while (static_cast<int32_t>(s.layers.size()) < l) s.layers.push_back(LayerAcceptance{static_cast<int32_t>(s.layers.size()) + 1});
    return s.layers[static_cast<size_t>(l - 1)];
  };
  auto num = [](const json& o, const char* k) { return o.is_object() && o.contains(k) && o[k].is_number() ? o[k].get<double>() : 0.0; };
  auto flag = [](const json& o, const char* k) { return o.is_object() && o.contains(k) && o[k].is_boolean() && o[k].get<bool>(); };
  // A layer number sizes the table: outside [1, kMaxLayer] the entry is skipped like any other malformed one.
  constexpr int64_t kMaxLayer = 4096;
  auto layer_of = [&](const json& o) { return o.is_object() && o.contains("layer") ? json_int_in(o["layer"], 1, kMaxLayer) : std::nullopt; };
  const TraceRecords records = replay.records_view();
  json scratch;
  for (size_t i = 0; i < records.size(); ++i) {
    if (replay.entries()[i].kind != TraceRecordKind::step) continue;
    const json& r = records.at(i, scratch);
    if (!r.is_object() || !r.contains("verify") || !r["verify"].is_object()) continue;
    const json& ver = r["verify"];
    const int32_t step = r.contains("step") ? static_cast<int32_t>(json_int_in(r["step"], 0, INT32_MAX).value_or(-1)) : -1;
    if (ver.contains("accepted_tokens") && ver["accepted_tokens"].is_array()) {
      s.per_step.emplace_back(step, static_cast<int32_t>(ver["accepted_tokens"].size()));
      continue;
    }
    if (const auto n = ver.contains("steps") ? json_int_in(ver["steps"], INT32_MIN, INT32_MAX) : std::nullopt)
      s.per_step.emplace_back(step, static_cast<int32_t>(*n));
    if (ver.contains("layers") && ver["layers"].is_array()) {
      for (const json& L : ver["layers"]) {
        const auto l = layer_of(L);
        if (!l) continue;
        LayerAcceptance& a = layer(static_cast<int32_t>(*l));
        ++a.verified;
        a.passed += flag(L, "passed") ? 1 : 0;
        a.predicted_sum += num(L, "predicted_accept");
        a.width_sum += num(L, "width");
        if (L.contains("drafts") && L["drafts"].is_array())
          for (const json& d : L["drafts"]) {
            ++a.tested;
            a.accepted += flag(d, "accepted") ? 1 : 0;
          }
      }
    } else if (ver.contains("decisions") && ver["decisions"].is_array()) {
      for (const json& d : ver["decisions"]) {
        const auto l = layer_of(d);
        if (!l) continue;
        LayerAcceptance& a = layer(static_cast<int32_t>(*l));
        const bool ok = flag(d, "accepted");
        ++a.verified;
        ++a.tested;
        a.passed += ok;
        a.accepted += ok;
        a.width_sum += 1;
      }
    }
  }
  return s;
}

}  // namespace triescope
