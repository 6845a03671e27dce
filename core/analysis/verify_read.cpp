#include "core/analysis/verify_read.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

#include "core/config/json_reader.h"

namespace triescope {

using nlohmann::json;

void VerifyRead::bad(const std::string& path, const std::string& what) {
  if (err.empty()) err = where + ": " + path + ": " + what;
}

int32_t VerifyRead::i(const json& o, const char* k, const std::string& path, int32_t dflt) {
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

const json& VerifyRead::arr(const json& o, const char* k, const std::string& path) {
  static const json empty = json::array();
  if (!o.is_object() || !o.contains(k) || o[k].is_null()) return empty;
  if (!o[k].is_array()) {
    bad(path + "." + k, "expected an array");
    return empty;
  }
  return o[k];
}

std::optional<json> VerifyRead::step_record(int32_t step) const {
  for (json& r : replay.records_of_step(step))
    if (r.value("kind", "") == "step") return std::move(r);
  return std::nullopt;
}

std::optional<json> VerifyRead::draft_record() const {
  std::optional<json> draft = step_record(view.step - 1);
  if (draft && draft->value("phase", "") != "draft") draft.reset();
  return draft;
}

int32_t VerifyRead::token_of(int32_t node) const {
  return node >= 0 && static_cast<size_t>(node) < view.nodes.size() ? view.nodes[static_cast<size_t>(node)].token : -1;
}

int32_t VerifyRead::parent_of(int32_t node) const {
  return node >= 0 && static_cast<size_t>(node) < view.nodes.size() ? view.nodes[static_cast<size_t>(node)].parent : -1;
}

VerifyChip VerifyRead::chip(int32_t node, Decision d) const {
  VerifyChip c;
  c.node = node;
  c.token = token_of(node);
  c.decision = d;
  return c;
}

std::string verify_fixed(double x, int prec) {
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, x);
  return buf;
}

std::string verify_layer_chip_label(const VerifyChip& c) {
  switch (c.decision) {
    case Decision::accepted:
    case Decision::rejected: return std::isnan(c.accept_prob) ? std::string() : "a=" + verify_fixed(c.accept_prob) + " u=" + verify_fixed(c.u);
    case Decision::drafted: return std::isnan(c.q) ? std::string("draft") : "q=" + verify_fixed(c.q, 3);
    case Decision::untested: return "untested";
    case Decision::parent_rejected: return "parent \u2717";
    case Decision::not_verified: return "not verified";
    case Decision::sampled_residual: return "residual";
    case Decision::sampled_target: return std::isnan(c.prob) ? std::string("target") : "p=" + verify_fixed(c.prob, 3);
    default: return {};
  }
}

namespace {

// A verified (not extra) layer's second and third head lines and its tag.
void verified_layer_heads(const VerifyInfo& info, const VerifyLayer& L, VerifyRow& r) {
  const std::string acc = std::to_string(L.count(Decision::accepted));
  r.head2 = L.width >= 0 ? "accepted " + acc + " / W_L = " + std::to_string(L.width) : "accepted " + acc;
  if (L.surviving >= 0) r.head2 += " (" + std::to_string(L.surviving) + " surv.)";
  const bool stop = info.stopped_at_layer == L.layer || !L.passed;
  r.head3 = stop ? "STOPPED here" : "passed";
  if (!std::isnan(L.predicted)) r.head3 += " \u00b7 P(pass) " + verify_fixed(L.predicted) + " (Eq. 5)";
  r.tag = stop ? VerifyRowTag::stopped : VerifyRowTag::passed;
}

VerifyRow layer_row(const VerifyInfo& info, const VerifyLayer& L) {
  VerifyRow r;
  r.head1 = "layer " + std::to_string(L.layer) + (L.extra ? " (extra)" : "");
  const std::string n = std::to_string(L.chips.size());
  if (info.draft) {
    r.head2 = n + " draft beam(s)";
    r.tag = VerifyRowTag::draft;
  } else if (L.extra) {
    r.head2 = n + " beam(s) from p_beam";
    r.head3 = "all " + std::to_string(L.layer - 1) + " layers passed";
    r.tag = VerifyRowTag::passed;
  } else if (!L.verified) {
    r.head2 = "not verified";
    r.head3 = "stopped at layer " + std::to_string(info.stopped_at_layer);
  } else {
    verified_layer_heads(info, L, r);
  }
  for (const VerifyChip& c : L.chips) r.chips.push_back({c, verify_layer_chip_label(c)});
  return r;
}

}  // namespace

std::vector<VerifyRow> verify_layer_rows(const VerifyInfo& info) {
  std::vector<VerifyRow> rows;
  for (const VerifyLayer& L : info.layers) rows.push_back(layer_row(info, L));
  return rows;
}

std::string verify_layer_summary(const VerifyInfo& I) {
  auto n = [](auto x) { return std::to_string(x); };
  if (I.draft)
    return "<b>Draft</b>, iteration " + n(I.iteration) + ": the draft model proposed <b>" + n(I.layers.size()) + "</b> layer(s), " +
           n(I.total(Decision::drafted)) + " draft beam(s) in all (q_beam shown)" +
           (I.verify_step >= 0 ? "; the target verifies them at step " + n(I.verify_step) : std::string()) + ".";
  const auto verified = std::count_if(I.layers.begin(), I.layers.end(), [](const VerifyLayer& l) { return l.verified && !l.extra; });
  std::string s = "<b>Verify</b>, iteration " + n(I.iteration) + " (" + n(I.gamma) + " draft layer(s), " + n(verified) + " verified): ";
  s += I.stopped_at_layer > 0 ? "<b style='color:#c62828'>stopped at layer " + n(I.stopped_at_layer) + "</b> (fewer than W_L accepted). "
                              : std::string("<b style='color:#2e7d32'>every layer passed</b>. ");
  s += "Drafts: " + n(I.total(Decision::accepted)) + " accepted, " + n(I.total(Decision::rejected)) + " rejected, " +
       n(I.total(Decision::untested)) + " untested, " + n(I.total(Decision::parent_rejected)) + " parent rejected, " +
       n(I.total(Decision::not_verified)) + " not verified; " + n(I.total(Decision::sampled_residual)) + " sampled from the residual, " +
       n(I.total(Decision::sampled_target)) + " from the target. ";
  if (I.steps >= 0) s += "<b>" + n(I.steps) + "</b> new token(s) per beam this iteration.";
  return s;
}

std::vector<std::pair<int32_t, int32_t>> verify_chip_nodes(const VerifyLayer& L, Decision d) {
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const VerifyChip& c : L.chips) {
    if (c.decision != d) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == c.node; });
    if (it == out.end()) out.emplace_back(c.node, 1);
    else ++it->second;
  }
  return out;
}

void verify_narrate_nodes(NarrationBuilder& b, const std::vector<std::pair<int32_t, int32_t>>& nodes) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) b.text(i + 1 == nodes.size() ? " and " : ", ");
    b.node(nodes[i].first);
    if (nodes[i].second > 1) b.text(" (x" + std::to_string(nodes[i].second) + ")");
  }
}

LayerAcceptance& acceptance_layer(AcceptanceSeries& s, int32_t l) {
  if (l < 1) l = 1;
  while (static_cast<int32_t>(s.layers.size()) < l) s.layers.push_back(LayerAcceptance{static_cast<int32_t>(s.layers.size()) + 1});
  return s.layers[static_cast<size_t>(l - 1)];
}

LayerAcceptance* acceptance_layer_in(AcceptanceSeries& s, int32_t l) {
  constexpr int32_t kMaxLayer = 4096;
  return l >= 1 && l <= kMaxLayer ? &acceptance_layer(s, l) : nullptr;
}

}  // namespace triescope
