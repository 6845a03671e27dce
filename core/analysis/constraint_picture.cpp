#include "core/analysis/constraint_picture.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/config/json_reader.h"
#include "core/constraint/constraint_index.h"
#include "core/constraint/vntk.h"

namespace triescope {

namespace {

struct Chosen {
  int32_t beam = -1, from_beam = -1, node = -1, token = -1;
  double score = 0;
};

int32_t int_field(const json& o, const char* k, int64_t lo, int64_t hi, const std::string& where, std::vector<std::string>& problems) {
  if (!o.is_object() || !o.contains(k)) return -1;
  const auto x = json_int_in(o[k], lo, hi);
  if (!x) {
    problems.push_back(where + "." + k + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                       json_brief(o[k]));
    return -1;
  }
  return static_cast<int32_t>(*x);
}

std::vector<Chosen> read_chosen(const json& chosen, const std::string& where, std::vector<std::string>& problems) {
  std::vector<Chosen> out;
  if (!chosen.is_array()) return out;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const json& c = chosen[i];
    const std::string w = where + ".chosen[" + std::to_string(i) + "]";
    Chosen x;
    x.beam = int_field(c, "beam", 0, INT32_MAX, w, problems);
    x.from_beam = int_field(c, "from_beam", 0, INT32_MAX, w, problems);
    x.node = int_field(c, "node", -1, INT32_MAX, w, problems);
    x.token = int_field(c, "token", -1, INT32_MAX, w, problems);
    if (c.is_object() && c.contains("score") && c["score"].is_number()) x.score = c["score"].get<double>();
    out.push_back(x);
  }
  return out;
}

// The step record's `constraint` entries: what the decoder recorded per beam.
std::vector<ConstraintBeam> read_records(const json& rec, const std::string& where, std::vector<std::string>& problems) {
  std::vector<ConstraintBeam> out;
  if (!rec.is_array()) {
    problems.push_back(where + ".constraint must be an array, got " + json_brief(rec));
    return out;
  }
  for (size_t i = 0; i < rec.size(); ++i) {
    const json& e = rec[i];
    const std::string w = where + ".constraint[" + std::to_string(i) + "]";
    ConstraintBeam b;
    b.recorded = true;
    b.beam = int_field(e, "beam", 0, INT32_MAX, w, problems);
    if (e.is_object() && e.contains("state")) {
      const auto s = json_int_in(e["state"], -1, INT64_MAX);
      if (s) b.recorded_state = *s;
      else problems.push_back(w + ".state must be an integer >= -1, got " + json_brief(e["state"]));
    }
    b.valid = int_field(e, "valid", 0, INT32_MAX, w, problems);
    b.slice = int_field(e, "slice", 0, INT32_MAX, w, problems);
    if (e.is_object() && e.contains("path") && e["path"].is_string()) b.path = e["path"].get<std::string>();
    if (e.is_object() && e.contains("row")) {
      const json& r = e["row"];
      const bool pair = r.is_array() && r.size() == 2;
      const int64_t a = pair ? json_int_in(r[0], 0, INT64_MAX).value_or(-1) : -1;
      const int64_t z = pair ? json_int_in(r[1], 0, INT64_MAX).value_or(-1) : -1;
      if (a >= 0 && z >= a) {
        b.recorded_row_begin = a;
        b.recorded_row_end = z;
      } else {
        problems.push_back(w + ".row must be [start, end] with 0 <= start <= end, got " + json_brief(r));
      }
    }
    b.state = b.recorded_state;
    out.push_back(std::move(b));
  }
  return out;
}

// Level and tokens of the beam whose last token is `node`: the tokens below the prompt.
void prefix_from_node(const StepView& v, int32_t node, int32_t prompt_len, ConstraintBeam& b) {
  if (node < 0 || static_cast<size_t>(node) >= v.nodes.size()) return;
  b.node = node;
  b.level = std::max(0, v.nodes[static_cast<size_t>(node)].depth + 1 - prompt_len);
  b.prefix.assign(static_cast<size_t>(b.level), -1);
  int32_t n = node;
  for (int32_t i = b.level - 1; i >= 0 && n >= 0 && static_cast<size_t>(n) < v.nodes.size(); --i) {
    b.prefix[static_cast<size_t>(i)] = v.nodes[static_cast<size_t>(n)].token;
    n = v.nodes[static_cast<size_t>(n)].parent;
  }
}

// beam -> node after the previous step (for beams that kept nothing at this one).
std::map<int32_t, int32_t> previous_beam_nodes(const TraceReplay& replay, int32_t step) {
  std::map<int32_t, int32_t> out;
  const auto& steps = replay.steps();
  auto it = std::lower_bound(steps.begin(), steps.end(), step);
  if (it == steps.begin()) return out;
  std::vector<std::string> ignored;
  for (const json& r : replay.records_of_step(*(it - 1)))
    if (r.value("kind", "") == "step" && r.contains("chosen"))
      for (const Chosen& c : read_chosen(r["chosen"], "", ignored))
        if (c.beam >= 0 && c.node >= 0) out[c.beam] = c.node;
  return out;
}

// Tokens of state `s`, by walking up the rows (breadth-first ids only).
std::vector<int32_t> prefix_of_state(const TransitionMatrix& tm, int64_t s) {
  std::vector<int32_t> p;
  while (s > 0) {
    p.push_back(tm.state_token(s));
    s = constraint_parent_state(tm, s);
  }
  std::reverse(p.begin(), p.end());
  return p;
}

// The state the decoder reached along `prefix`, through core's own transition (Alg. 1 phase 4).
int64_t walk_prefix(const TransitionMatrix& tm, const std::vector<int32_t>& prefix) {
  int64_t s = 0;
  for (size_t i = 0; i < prefix.size() && s >= 0; ++i) s = static_next_state(tm, s, prefix[i], static_cast<int32_t>(i));
  return s;
}

void fill_from_index(const TransitionMatrix& tm, const ConstraintHeader& h, const ConstraintPictureOptions& opt,
                     const std::string& where, ConstraintBeam& b) {
  std::ostringstream bad;
  if (b.node >= 0) {
    b.state = walk_prefix(tm, b.prefix);
    if (b.recorded && h.states_are_csr() && b.recorded_state != b.state)
      bad << where << ".state: recorded " << b.recorded_state << ", the index gives " << b.state << " for the beam's tokens";
  } else if (b.recorded && h.states_are_csr() && b.recorded_state >= 0 && b.recorded_state < tm.num_states()) {
    b.state = b.recorded_state;
    b.prefix = prefix_of_state(tm, b.state);
    b.level = static_cast<int32_t>(b.prefix.size());
  } else {
    b.state = -1;
  }
  if (b.state < 0 || b.state >= tm.num_states()) {
    b.problem = bad.str();
    return;
  }
  b.indexed = true;
  b.row_begin = tm.row_begin(b.state);
  b.row_end = b.level < tm.length ? tm.row_end(b.state) : b.row_begin;
  b.items = constraint_items_below(tm, b.state);
  for (int64_t e = b.row_begin; e < b.row_end && e - b.row_begin < opt.max_row_entries; ++e)
    b.row.push_back({tm.edge_token(e), tm.edge_next(e), constraint_items_below(tm, tm.edge_next(e))});
  b.dense = b.level >= 0 && b.level < tm.dense_levels;
  if (b.dense) {
    const size_t w = static_cast<size_t>(tm.words_per_row);
    const uint64_t* row = b.level == 0 ? tm.dense_mask1.data()
                                       : tm.dense_mask2.data() + static_cast<size_t>(b.prefix[0]) * w;
    b.dense_bits.assign(row, row + w);
  }
  if (b.recorded && b.recorded_row_begin >= 0 && (b.recorded_row_begin != b.row_begin || b.recorded_row_end != b.row_end))
    bad << (bad.tellp() > 0 ? "; " : "") << where << ".row: recorded [" << b.recorded_row_begin << ", " << b.recorded_row_end
        << "], the index's row is [" << b.row_begin << ", " << b.row_end << "]";
  if (b.recorded && b.valid >= 0 && b.valid != b.row_end - b.row_begin)
    bad << (bad.tellp() > 0 ? "; " : "") << where << ".valid: recorded " << b.valid << ", the index's row has "
        << b.row_end - b.row_begin << " entries";
  b.problem = bad.str();
}

}  // namespace

int64_t constraint_items_below(const TransitionMatrix& tm, int64_t s) {
  if (s < 0 || s >= tm.num_states()) return -1;
  int64_t first = s, last = s;
  for (int32_t l = tm.level_of(s); l < tm.length; ++l) {
    if (tm.row_end(first) <= tm.row_begin(first) || tm.row_end(last) <= tm.row_begin(last)) return 0;
    first = tm.edge_next(tm.row_begin(first));
    last = tm.edge_next(tm.row_end(last) - 1);
  }
  return last - first + 1;
}

int64_t constraint_parent_state(const TransitionMatrix& tm, int64_t s) {
  if (s <= 0 || s >= tm.num_states()) return -1;
  const int32_t l = tm.level_of(s);
  const int64_t e = s - 1;  // edge e leads into state e + 1 (both layouts)
  int64_t lo = tm.level_start[static_cast<size_t>(l) - 1], hi = tm.level_start[static_cast<size_t>(l)];  // [lo, hi)
  // The last state of level l - 1 whose row starts at or before e holds e.
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (tm.row_begin(mid) <= e) lo = mid;
    else hi = mid;
  }
  return lo;
}

namespace {

// The set's trie near the beams: every state when the set is small, else the
// beams' paths and up to max_children_drawn children of each masked state
// (kept tokens first); each node counts the children it leaves out.
void build_tree(ConstraintPicture& p, const TransitionMatrix* tm, const ConstraintPictureOptions& opt) {
  std::map<std::vector<int32_t>, int32_t> by_prefix;
  auto node_of = [&](const std::vector<int32_t>& prefix) -> int32_t {
    std::vector<int32_t> key;
    int32_t at = 0;
    for (int32_t t : prefix) {
      key.push_back(t);
      auto [it, fresh] = by_prefix.emplace(key, static_cast<int32_t>(p.tree.size()));
      if (fresh) {
        ConstraintTreeNode n;
        n.parent = at;
        n.token = t;
        n.level = static_cast<int32_t>(key.size());
        if (tm) n.state = walk_prefix(*tm, key);
        p.tree.push_back(std::move(n));
      }
      at = it->second;
    }
    return at;
  };
  ConstraintTreeNode root;
  root.state = tm ? 0 : -1;
  p.tree.push_back(root);
  if (tm && tm->num_states() <= opt.whole_tree_states) {
    p.whole_tree = true;
    std::vector<std::vector<int32_t>> prefix_of(static_cast<size_t>(tm->num_states()));
    for (int64_t s = 0; s < tm->level_start[static_cast<size_t>(tm->length)]; ++s)
      for (int64_t e = tm->row_begin(s); e < tm->row_end(s); ++e) {
        auto& c = prefix_of[static_cast<size_t>(tm->edge_next(e))];
        c = prefix_of[static_cast<size_t>(s)];
        c.push_back(tm->edge_token(e));
        node_of(c);
      }
  }
  auto full = [](const ConstraintBeam& b) {
    return b.level >= 0 && std::find(b.prefix.begin(), b.prefix.end(), -1) == b.prefix.end();
  };
  for (const ConstraintBeam& b : p.masked) {
    if (!full(b)) continue;
    const int32_t at = node_of(b.prefix);
    p.tree[static_cast<size_t>(at)].masked_beams.push_back(b.beam);
    if (!tm && b.state >= 0) p.tree[static_cast<size_t>(at)].state = b.state;
    if (!b.indexed || p.whole_tree) continue;
    std::vector<int32_t> drawn;
    for (const auto& k : b.kept) drawn.push_back(k.first);
    for (const auto& e : b.row)
      if (static_cast<int32_t>(drawn.size()) < opt.max_children_drawn && std::find(drawn.begin(), drawn.end(), e.token) == drawn.end())
        drawn.push_back(e.token);
    for (int32_t t : drawn) {
      std::vector<int32_t> c = b.prefix;
      c.push_back(t);
      node_of(c);
    }
  }
  for (const ConstraintBeam& b : p.after)
    if (full(b)) p.tree[static_cast<size_t>(node_of(b.prefix))].after_beams.push_back(b.beam);
  if (!tm) return;
  std::vector<int64_t> drawn_children(p.tree.size(), 0);
  for (const auto& n : p.tree)
    if (n.parent >= 0) ++drawn_children[static_cast<size_t>(n.parent)];
  for (size_t i = 0; i < p.tree.size(); ++i) {
    ConstraintTreeNode& n = p.tree[i];
    n.items = constraint_items_below(*tm, n.state);
    if (n.state >= 0 && n.level < tm->length) n.hidden_children = tm->row_end(n.state) - tm->row_begin(n.state) - drawn_children[i];
  }
}

}  // namespace

ConstraintPicture constraint_picture_at(const StepView& v, const TraceReplay& replay, const ConstraintHeader& h,
                                        const ConstraintIndexLoaded* index, int32_t prompt_len, const ConstraintPictureOptions& opt) {
  ConstraintPicture p;
  p.step = v.step;
  p.length = h.length;
  p.vocab_size = h.vocab_size;
  p.dense_levels = h.dense_levels;
  p.words_per_row = (h.vocab_size + 63) / 64;
  const TransitionMatrix* tm = index ? index->matrix.get() : nullptr;
  p.indexed = tm != nullptr;
  const std::string where = replay.origin() + ": step " + std::to_string(v.step);
  const std::vector<Chosen> chosen = read_chosen(v.chosen, where, p.problems);
  if (v.extra.is_object() && v.extra.contains("constraint")) {
    p.has_record = true;
    p.masked = read_records(v.extra["constraint"], where, p.problems);
  }
  std::optional<std::map<int32_t, int32_t>> prev;
  for (size_t i = 0; i < p.masked.size(); ++i) {
    ConstraintBeam& b = p.masked[i];
    int32_t node = -1;
    for (const Chosen& c : chosen)
      if (c.from_beam == b.beam && c.beam >= 0) {
        if (node < 0 && c.node >= 0 && static_cast<size_t>(c.node) < v.nodes.size()) node = v.nodes[static_cast<size_t>(c.node)].parent;
        b.kept.emplace_back(c.token, c.score);
      }
    if (node < 0) {
      if (!prev) prev = previous_beam_nodes(replay, v.step);
      if (auto it = prev->find(b.beam); it != prev->end()) node = it->second;
    }
    prefix_from_node(v, node, prompt_len, b);
    if (tm) fill_from_index(*tm, h, opt, where + ".constraint[" + std::to_string(i) + "]", b);
    if (!b.problem.empty()) p.problems.push_back(b.problem);
  }
  for (size_t i = 0; i < chosen.size(); ++i) {
    ConstraintBeam b;
    b.beam = chosen[i].beam;
    prefix_from_node(v, chosen[i].node, prompt_len, b);
    if (tm) fill_from_index(*tm, h, opt, where + ".chosen[" + std::to_string(i) + "]", b);
    p.after.push_back(std::move(b));
  }
  build_tree(p, tm, opt);
  return p;
}

}  // namespace triescope
