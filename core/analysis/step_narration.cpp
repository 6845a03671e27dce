#include "core/analysis/step_narration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/analysis/verify_info.h"
#include "core/analysis/verify_kind.h"
#include "core/decode/algorithm.h"

namespace triescope {

using nlohmann::json;

TreeBefore tree_before(const StepView& previous) {
  TreeBefore b;
  b.step = previous.step;
  b.status.reserve(previous.nodes.size());
  for (const TreeNode& n : previous.nodes) b.status.push_back(n.status);
  b.slot_to_node = previous.slot_to_node;
  // The beams going into the next step are the chosen ones, in beam order;
  // a step that chose none (a prefill) hands on its live leaves.
  if (previous.chosen.is_array())
    for (const json& c : previous.chosen)
      if (c.is_object() && c.contains("node") && c["node"].is_number_integer()) b.beams.push_back(c["node"].get<int32_t>());
  if (b.beams.empty()) {
    std::vector<char> has_child(previous.nodes.size(), 0);
    for (const TreeNode& n : previous.nodes)
      if (n.parent >= 0 && static_cast<size_t>(n.parent) < has_child.size()) has_child[static_cast<size_t>(n.parent)] = 1;
    for (const TreeNode& n : previous.nodes)
      if (n.status == NodeStatus::live && !has_child[static_cast<size_t>(n.id)]) b.beams.push_back(n.id);
  }
  return b;
}

int32_t narration_previous_step(const TraceReplay& replay, int32_t step) {
  const TraceSteps s = replay.steps();
  const auto it = std::lower_bound(s.begin(), s.end(), step);
  return it == s.begin() ? -1 : *(it - 1);
}

namespace {

std::optional<int64_t> int_field(const json& o, const char* k) {
  if (!o.is_object() || !o.contains(k) || !o[k].is_number_integer()) return std::nullopt;
  return o[k].get<int64_t>();
}
std::optional<double> num_field(const json& o, const char* k) {
  if (!o.is_object() || !o.contains(k) || !o[k].is_number()) return std::nullopt;
  return o[k].get<double>();
}

// What the header says that the sentences need: read once per step (a few lookups).
struct HeaderFacts {
  const AlgorithmSpec* spec = nullptr;  // null: an algorithm this build does not know (e.g. external)
  bool scored = false;                  // node logprobs are cumulative scores
  int64_t eos = -1, max_new = -1, prompt_len = -1;
};

HeaderFacts header_facts(const HeaderRecord& h) {
  HeaderFacts f;
  f.spec = algorithm_find(h.algorithm);
  f.scored = f.spec && f.spec->scored;
  const json& cfg = h.config;
  // Beam algorithms keep these in config.beam, the others at the top of config.
  for (const json* o : {&cfg, cfg.contains("beam") ? &cfg["beam"] : nullptr}) {
    if (!o) continue;
    if (auto x = int_field(*o, "eos_token")) f.eos = *x;
    if (auto x = int_field(*o, "max_new_tokens")) f.max_new = *x;
  }
  if (cfg.contains("prompt") && cfg["prompt"].is_array()) f.prompt_len = static_cast<int64_t>(cfg["prompt"].size());
  return f;
}

std::string count_of(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }
std::string ordinal(size_t n) {
  const char* suf = (n % 100 >= 11 && n % 100 <= 13) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suf;
}

// Everything one narration reads, and the changes it derives once.
struct Narrator {
  const StepView& v;
  const TraceReplay& r;
  const TreeBefore* before;  // null: not known for this step
  HeaderFacts h;
  std::vector<char> has_child;
  std::set<int32_t> added;
  std::vector<NarrationSentence> out;

  Narrator(const StepView& view, const TraceReplay& replay, const TreeBefore* b) : v(view), r(replay), before(b), h(header_facts(replay.header_record())) {
    has_child.assign(v.nodes.size(), 0);
    for (const TreeNode& n : v.nodes)
      if (n.parent >= 0 && static_cast<size_t>(n.parent) < has_child.size()) has_child[static_cast<size_t>(n.parent)] = 1;
    added.insert(v.added.begin(), v.added.end());
  }
  NarrationBuilder make(const char* topic) const { return NarrationBuilder(v, r, topic); }
  void put(NarrationBuilder& b) {
    if (!b.empty()) out.push_back(b.take());
  }
  const TreeNode* node(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < v.nodes.size() ? &v.nodes[static_cast<size_t>(id)] : nullptr; }
  // Nodes whose status became `s` in this step (new nodes added with it, or a
  // recorded change); needs `before` for the changes.
  std::vector<int32_t> became(NodeStatus s) const {
    std::vector<int32_t> ids;
    for (const TreeNode& n : v.nodes) {
      if (n.status != s) continue;
      const bool was_there = before && static_cast<size_t>(n.id) < before->status.size();
      if (added.count(n.id) ? true : was_there && before->status[static_cast<size_t>(n.id)] != s) ids.push_back(n.id);
    }
    return ids;
  }
  // Generated length of a node's path (depth past the prompt), when the header gives the prompt.
  std::optional<int64_t> generated_len(int32_t id) const {
    const TreeNode* n = node(id);
    if (!n || h.prompt_len < 0) return std::nullopt;
    return n->depth - h.prompt_len + 1;
  }

  void phase();
  void gc();
  void added_nodes();
  void kept();
  void dropped();
  void dropped_one(int32_t beam, const std::set<int32_t>& pruned, std::set<int32_t>& told);
  void finished(const std::set<int32_t>& told);
  void constraint();
  void verify();
  void kv();
};

const char* phase_words(const std::string& phase) {
  if (phase == "prefill") return "the prompt is laid into the KV cache and fed in one forward pass";
  if (phase == "expand") return "every beam is extended and the best continuations are kept";
  if (phase == "sample") return "the beams are drawn from the joint beam distribution";
  if (phase == "draft") return "the draft model proposes tokens for the target to verify";
  if (phase == "verify") return "the target model verifies the proposed tokens";
  if (phase == "decode") return "every sequence gets its next token";
  if (phase == "forward") return "the engine ran a forward pass over the nodes it added";
  return nullptr;
}

void Narrator::phase() {
  NarrationBuilder b = make("phase");
  b.text("Step " + std::to_string(v.step) + (v.phase.empty() ? std::string() : " (" + v.phase + ")"));
  if (const char* w = phase_words(v.phase)) b.text(": " + std::string(w));
  b.text(".");
  if (v.forward && !v.forward->queries.empty()) {
    const auto [lo, hi] = std::minmax_element(v.forward->positions.begin(), v.forward->positions.end());
    b.text(" The forward pass feeds " + count_of(v.forward->queries.size(), "node", "nodes"));
    if (lo != v.forward->positions.end())
      b.text(*lo == *hi ? " at position " + std::to_string(*lo) : " at positions " + std::to_string(*lo) + " to " + std::to_string(*hi));
    b.text(" over " + count_of(static_cast<size_t>(v.forward->mask.cols), "KV slot", "KV slots") + ".");
  }
  put(b);
}

void Narrator::gc() {
  if (v.gc_slots_before < 0) return;
  std::vector<char> kept(static_cast<size_t>(v.gc_slots_before), 0);
  std::vector<std::pair<int32_t, int32_t>> moved;
  for (const auto& [o, n] : v.gc_moves) {
    if (o >= 0 && o < v.gc_slots_before) kept[static_cast<size_t>(o)] = 1;
    if (o != n) moved.emplace_back(o, n);
  }
  std::vector<int32_t> freed;
  for (int32_t s = 0; s < v.gc_slots_before; ++s)
    if (!kept[static_cast<size_t>(s)]) freed.push_back(s);
  NarrationBuilder b = make("gc");
  b.text("Garbage collection ran before this step's pass: " + std::to_string(v.gc_slots_before) + " slots became " +
         std::to_string(v.gc_moves.size()) + "; ");
  if (freed.empty()) b.text("no slot was freed");
  else b.text(count_of(freed.size(), "slot was", "slots were") + " freed");
  // Whose slots they were is the layout before the gc: the previous step's.
  std::vector<int32_t> owners;
  std::vector<int32_t> slots_named;
  for (int32_t s : freed) {
    const int32_t owner = before && static_cast<size_t>(s) < before->slot_to_node.size() ? before->slot_to_node[static_cast<size_t>(s)] : -1;
    if (owner >= 0) owners.push_back(owner);
    slots_named.push_back(s);
  }
  if (!freed.empty()) {
    b.text(" (slot");
    b.text(freed.size() == 1 ? " " : "s ");
    for (size_t i = 0; i < slots_named.size() && i < 16; ++i) b.text((i ? ", " : "") + std::to_string(slots_named[i]));
    if (slots_named.size() > 16) b.text(", ...");
    b.text(")");
    if (!owners.empty()) {
      b.text(owners.size() == freed.size() ? ", which held " : "; among them the slots of ");
      b.nodes(owners, 8);
    }
  }
  if (moved.empty()) b.text("; no slot moved.");
  else {
    b.text("; " + count_of(moved.size(), "slot moved", "slots moved") + " down (");
    for (size_t i = 0; i < moved.size() && i < 6; ++i) b.text((i ? ", " : "") + std::to_string(moved[i].first) + " \u2192 " + std::to_string(moved[i].second));
    b.text(moved.size() > 6 ? ", ...)." : ").");
  }
  put(b);
}

// The nearest ancestor of `id` not added in this step (-1: a new root).
int32_t anchor_of(const Narrator& n, int32_t id) {
  const TreeNode* x = n.node(id);
  while (x && x->parent >= 0 && n.added.count(x->parent)) x = n.node(x->parent);
  return x ? x->parent : -1;
}

// The nodes `ids` (one group, id order) after "<anchor> gets N new nodes: ":
// a leading chain is told by its ends ("the chain 'Once' #0 … 'time' #3"),
// then the nodes below it one by one, with their scores when they are scores.
void describe_group(const Narrator& n, const std::vector<int32_t>& ids, NarrationBuilder& b) {
  std::map<int32_t, int32_t> children;  // node -> its children within the group
  for (int32_t id : ids)
    if (const TreeNode* x = n.node(id)) ++children[x->parent];
  size_t chain = 1;
  while (chain < ids.size() && n.node(ids[chain]) && n.node(ids[chain])->parent == ids[chain - 1] && children[ids[chain - 1]] == 1) ++chain;
  size_t i = 0;
  if (chain >= 3 || (chain == 2 && ids.size() == 2)) {
    b.text("the chain ").node(ids.front()).text(chain > 2 ? " \u2026 " : ", ").node(ids[chain - 1]);
    i = chain;
    if (i < ids.size()) b.text(", then under ").node(ids[chain - 1]).text(": ");
  }
  for (size_t k = i; k < ids.size() && k < i + 12; ++k) {
    b.text(k > i ? ", " : "").node(ids[k]);
    const TreeNode* x = n.node(ids[k]);
    if (n.h.scored && x) b.text(" (" + narration_score(x->logprob) + ")");
  }
  if (ids.size() > i + 12) b.text(" and " + std::to_string(ids.size() - i - 12) + " more");
}

void Narrator::added_nodes() {
  if (v.added.empty()) return;
  std::map<int32_t, std::vector<int32_t>> groups;  // anchor -> added nodes below it, in id order
  for (int32_t id : v.added) groups[anchor_of(*this, id)].push_back(id);
  size_t told = 0;
  for (const auto& [anchor, ids] : groups) {
    NarrationBuilder b = make("added");
    if (++told > 6) {
      b.text("Nodes were added under " + std::to_string(groups.size() - 6) + " more parents.");
      put(b);
      break;
    }
    if (anchor < 0) b.text(ids.size() > 1 ? "New nodes from a new root: " : "New root: ");
    else b.text("Under ").node(anchor).text(ids.size() == 1 ? ", a new node: " : ", " + std::to_string(ids.size()) + " new nodes: ");
    describe_group(*this, ids, b);
    b.text(".");
    put(b);
  }
}

// The chosen entries and whether they carry what a rank claim needs: a score
// each and the beam each came from (beam search's top-b choice).
struct Chosen {
  std::vector<const json*> entries;
  bool ranked = false;
  double last_kept = 0;  // the lowest kept score (the b-th)
};

Chosen chosen_of(const StepView& v, bool scored) {
  Chosen c;
  if (!v.chosen.is_array()) return c;
  for (const json& e : v.chosen) c.entries.push_back(&e);
  c.ranked = scored && !c.entries.empty();
  c.last_kept = INFINITY;
  for (const json* e : c.entries) {
    const auto s = num_field(*e, "score");
    c.ranked = c.ranked && s && e->contains("from_beam") && !e->contains("prob");
    if (s) c.last_kept = std::min(c.last_kept, *s);
  }
  return c;
}

void Narrator::kept() {
  const Chosen c = chosen_of(v, h.scored);
  if (c.entries.empty()) return;
  const bool samples = c.entries.front()->contains("sample");
  NarrationBuilder b = make("kept");
  b.text(samples ? "The samples after this step: " : "The beams after this step" + std::string(c.ranked ? ", best first: " : ": "));
  for (size_t i = 0; i < c.entries.size() && i < 16; ++i) {
    const json& e = *c.entries[i];
    b.text(i ? ", " : "");
    if (auto nd = int_field(e, "node")) b.node(static_cast<int32_t>(*nd));
    else if (auto t = int_field(e, "token")) b.text("'" + r.token_text(static_cast<int32_t>(*t)) + "'");
    std::string detail;
    if (auto s = num_field(e, "score"); s && h.scored) detail = narration_score(*s);
    if (auto p = num_field(e, "prob")) detail += (detail.empty() ? "" : ", ") + std::string("p = ") + narration_score(*p);
    if (auto fb = int_field(e, "from_beam")) detail += (detail.empty() ? "" : ", ") + std::string("from beam ") + std::to_string(*fb);
    // Samples show their position ids: MultiGen's blocked positions put a block's tokens at one position.
    if (auto nd = int_field(e, "node"); nd && samples && node(static_cast<int32_t>(*nd)))
      detail += (detail.empty() ? "" : ", ") + std::string("position ") + std::to_string(node(static_cast<int32_t>(*nd))->depth);
    if (!detail.empty()) b.text(" (" + detail + ")");
  }
  if (c.entries.size() > 16) b.text(" and " + std::to_string(c.entries.size() - 16) + " more");
  b.text(".");
  if (c.ranked)
    b.text(" The " + ordinal(c.entries.size()) + " and last kept score is " + narration_score(c.last_kept) + ".");
  put(b);
}

// The beam index of `node` among the beams going into this step, -1.
int32_t beam_index(const TreeBefore* before, int32_t node) {
  if (!before) return -1;
  const auto it = std::find(before->beams.begin(), before->beams.end(), node);
  return it == before->beams.end() ? -1 : static_cast<int32_t>(it - before->beams.begin());
}

// This step's constraint entry of beam `i`, or null.
const json* constraint_entry(const StepView& v, int32_t i) {
  if (i < 0 || !v.extra.is_object() || !v.extra.contains("constraint") || !v.extra["constraint"].is_array()) return nullptr;
  for (const json& e : v.extra["constraint"])
    if (int_field(e, "beam") == std::optional<int64_t>(i)) return &e;
  return nullptr;
}

// Why a beam that went into the step was pruned, from the first reason the
// records show: it finished (an EOS child), the constraint allowed it nothing,
// or the scores (its own against the b-th kept one).
void Narrator::dropped_one(int32_t beam, const std::set<int32_t>& pruned, std::set<int32_t>& told) {
  NarrationBuilder b = make("dropped");
  b.node(beam).text(" dropped out: ");
  told.insert(beam);
  int32_t eos_child = -1;
  for (int32_t id : v.added)
    if (const TreeNode* x = node(id); x && x->parent == beam && x->status == NodeStatus::finished && h.eos >= 0 && x->token == h.eos) eos_child = id;
  const json* cons = constraint_entry(v, beam_index(before, beam));
  const Chosen c = chosen_of(v, h.scored);
  const TreeNode* self = node(beam);
  if (eos_child >= 0) {
    told.insert(eos_child);
    b.text("it finished with the end-of-sequence token ").node(eos_child).text(", so it is a finished hypothesis and no longer a beam.");
  } else if (cons && int_field(*cons, "valid") == std::optional<int64_t>(0)) {
    b.text("the constraint allowed no token after it (state " + cons->value("state", json()).dump() + ", 0 valid).");
  } else if (c.ranked && self) {
    const std::string k = ordinal(c.entries.size()) + " and last kept score " + narration_score(c.last_kept);
    if (self->logprob < c.last_kept)
      b.text("its score " + narration_score(self->logprob) + " was already below the " + k +
             ", and a continuation only lowers a score, so none of its continuations could be kept.");
    else
      b.text("none of its continuations was among the " + std::to_string(c.entries.size()) + " kept; each scored at or below the " + k +
             " (its own score was " + narration_score(self->logprob) + ").");
  } else if (!c.entries.empty()) {
    b.text("no beam after this step continues it.");
  } else {
    b.text("it is marked pruned (the trace records no reason).");
  }
  std::vector<int32_t> with;
  for (const TreeNode* x = self ? node(self->parent) : nullptr; x && pruned.count(x->id) && !told.count(x->id); x = node(x->parent)) {
    with.push_back(x->id);
    told.insert(x->id);
  }
  if (!with.empty()) b.text(" With it, ").nodes(with, 6).text(with.size() == 1 ? " lost its last live child and is pruned too." : " lost their last live child and are pruned too.");
  put(b);
}

std::set<int32_t> dropped_all(Narrator& n) {
  std::set<int32_t> told;
  if (!n.before) return told;  // a status change needs the tree before the step
  const std::vector<int32_t> p = n.became(NodeStatus::pruned);
  const std::set<int32_t> pruned(p.begin(), p.end());
  for (int32_t beam : n.before->beams)
    if (pruned.count(beam) && !told.count(beam)) n.dropped_one(beam, pruned, told);
  std::vector<int32_t> rest;
  for (int32_t id : p)
    if (!told.count(id)) rest.push_back(id);
  if (!rest.empty()) {
    NarrationBuilder b = n.make("dropped");
    b.text("Also marked pruned this step: ").nodes(rest).text(".");
    n.put(b);
    told.insert(rest.begin(), rest.end());
  }
  return told;
}

void Narrator::finished(const std::set<int32_t>& told) {
  std::vector<int32_t> eos, length, other;
  for (int32_t id : became(NodeStatus::finished)) {
    if (told.count(id)) continue;
    const TreeNode* x = node(id);
    const auto len = generated_len(id);
    if (h.eos >= 0 && x->token == h.eos) eos.push_back(id);
    else if (len && h.max_new > 0 && *len >= h.max_new) length.push_back(id);
    else other.push_back(id);
  }
  auto say = [&](const std::vector<int32_t>& ids, const std::string& why) {
    if (ids.empty()) return;
    NarrationBuilder b = make("finished");
    b.text(ids.size() == 1 ? "Finished: " : "Finished (" + std::to_string(ids.size()) + "): ").nodes(ids).text(", " + why + ".");
    put(b);
  };
  say(eos, "the end-of-sequence token");
  say(length, "the length limit max_new_tokens = " + std::to_string(h.max_new) + " is reached");
  say(other, "the trace records no reason");
  // Live beams at the length limit end here too, though no status says so.
  std::vector<int32_t> at_limit;
  for (const json* e : chosen_of(v, h.scored).entries)
    if (auto nd = int_field(*e, "node"); nd && node(static_cast<int32_t>(*nd)) && node(static_cast<int32_t>(*nd))->status == NodeStatus::live)
      if (auto len = generated_len(static_cast<int32_t>(*nd)); len && h.max_new > 0 && *len >= h.max_new) at_limit.push_back(static_cast<int32_t>(*nd));
  if (!at_limit.empty()) {
    NarrationBuilder b = make("finished");
    b.nodes(at_limit).text(at_limit.size() == 1 ? " has" : " have").text(" reached the length limit max_new_tokens = " + std::to_string(h.max_new) + ".");
    put(b);
  }
}

// What the constraint allowed each beam (the step's `constraint` record) and what was kept from it.
void Narrator::constraint() {
  if (!v.extra.is_object() || !v.extra.contains("constraint") || !v.extra["constraint"].is_array()) return;
  const json& entries = v.extra["constraint"];
  const Chosen c = chosen_of(v, h.scored);
  for (size_t k = 0; k < entries.size() && k < 8; ++k) {
    const json& e = entries[k];
    const auto i = int_field(e, "beam");
    const auto valid = int_field(e, "valid");
    if (!i || !valid) continue;
    std::vector<int32_t> from;  // kept nodes continuing beam i
    for (const json* ch : c.entries)
      if (int_field(*ch, "from_beam") == i && int_field(*ch, "node")) from.push_back(static_cast<int32_t>(*int_field(*ch, "node")));
    int32_t beam_node = before && *i >= 0 && static_cast<size_t>(*i) < before->beams.size() ? before->beams[static_cast<size_t>(*i)] : -1;
    if (beam_node < 0 && !from.empty() && node(from.front())) beam_node = node(from.front())->parent;
    NarrationBuilder b = make("constraint");
    b.text("Constraint on beam " + std::to_string(*i));
    if (beam_node >= 0) b.text(" (after ").node(beam_node).text(")");
    if (e.contains("state")) b.text(": state " + e["state"].dump());
    b.text(*valid == 0 ? " allows no token" : " allows " + count_of(static_cast<size_t>(*valid), "token", "tokens"));
    if (e.contains("row") && e["row"].is_array() && e["row"].size() == 2) b.text(", CSR row [" + e["row"][0].dump() + ", " + e["row"][1].dump() + ")");
    if (e.contains("path") && e["path"].is_string()) b.text(" (" + e["path"].get<std::string>() + " path)");
    if (!from.empty()) b.text("; kept from it: ").nodes(from);
    else if (c.ranked && *valid > 0) b.text("; none of its allowed continuations was kept");
    b.text(".");
    put(b);
  }
  if (entries.size() > 8) {
    NarrationBuilder b = make("constraint");
    b.text("The constraint record has " + std::to_string(entries.size() - 8) + " more beams.");
    put(b);
  }
}

void Narrator::verify() {
  if (v.phase != "draft" && !(v.extra.is_object() && v.extra.contains("verify"))) return;
  const VerifyInfo info = verify_info(v, r);
  if (!info.empty())
    if (const VerifyKindSpec* spec = verify_kind_find(info.kind))
      for (NarrationSentence& s : spec->narrate(info, v, r)) out.push_back(std::move(s));
  if (!info.error.empty()) {
    NarrationBuilder b = make("verify");
    b.text("Part of the verification record could not be read: " + info.error + ".");
    put(b);
  }
}

void Narrator::kv() {
  const std::optional<KvRecord>& figures = v.kv;
  if (!figures) return;
  NarrationBuilder b = make("kv");
  b.text("KV cache after the step: " + count_of(static_cast<size_t>(figures->slots), "slot", "slots") + " in use");
  b.text(" (peak " + std::to_string(figures->peak) + ")");
  if (figures->batch_slots) b.text("; the comparison layout would hold " + std::to_string(*figures->batch_slots));
  b.text(".");
  put(b);
}

}  // namespace

std::vector<NarrationSentence> step_narration(const StepView& view, const TraceReplay& replay, const TreeBefore* maybe_before) {
  static const TreeBefore kEmptyTree;  // before the first step: nothing
  const int32_t prev = narration_previous_step(replay, view.step);
  const TreeBefore* before = maybe_before && maybe_before->step == prev ? maybe_before : prev < 0 ? &kEmptyTree : nullptr;
  Narrator n(view, replay, before);
  n.phase();
  n.gc();
  n.added_nodes();
  n.kept();
  const std::set<int32_t> told = dropped_all(n);
  n.finished(told);
  n.constraint();
  n.verify();
  n.kv();
  return std::move(n.out);
}

}  // namespace triescope
