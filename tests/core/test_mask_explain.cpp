// Every mask cell explained (core/analysis/mask_cell_explain.h): the Figure 1
// worked example in the paper's words, every cell (or a seeded sample of a
// big mask) of every step of every bundled sample against the tree's
// ancestry and the recorded bit, the batch layout's beam copies against the
// trie decode of the same sample, and planted faults shown on exactly their
// cell with the check's rule.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "core/analysis/batch_copies.h"
#include "core/analysis/mask_cell_explain.h"
#include "core/trace/trace.h"
#include "sample_traces.h"

using namespace triescope;

namespace {

const testing::SampleTrace& sample(const std::string& name) { return testing::sample_trace(name); }

// One step's explainer inputs, owned.
struct StepSource {
  StepView view;
  ForwardLayout layout;
  std::vector<std::vector<int32_t>> copy_tokens;
  MaskCellSource src;
  StepSource(const TraceReplay& t, int32_t step) : view(t.at(step)) {
    layout = forward_layout(view, t.gc_after_forward_steps().count(step) > 0);
    src.view = &view;
    src.pass = view.forward ? &*view.forward : nullptr;
    src.layout = &layout;
    src.copies = mask_copy_layout(t);
    if (src.copies) copy_tokens = batch_copy_tokens(t, step);
    src.copy_tokens = &copy_tokens;
    src.prompt_len = trace_prompt_length(t);
    src.token_text = [&t](int32_t tok) { return token_display(t, tok); };
  }
  StepSource(const StepSource&) = delete;
  MaskCellExplanation at(int32_t row, int32_t col) const { return mask_cell_explain(src, row, col); }
};

int32_t node_with_token(const TraceReplay& t, const StepView& v, const std::string& text) {
  for (const TreeNode& n : v.nodes)
    if (t.token_text(n.token) == text) return n.id;
  FAIL("no node with token " << text);
  return -1;
}

bool is_ancestor_or_self(const StepView& v, int32_t a, int32_t q) {
  for (int32_t x = q; x >= 0; x = v.nodes[static_cast<size_t>(x)].parent)
    if (x == a) return true;
  return false;
}

// The deepest node that is an ancestor-or-self of both, by depths (not the
// explainer's walk), kNoNode in a forest.
int32_t lowest_common_ancestor(const StepView& v, int32_t a, int32_t b) {
  auto depth = [&](int32_t n) { return v.nodes[static_cast<size_t>(n)].depth; };
  while (a >= 0 && b >= 0 && a != b) {
    if (depth(a) >= depth(b)) a = v.nodes[static_cast<size_t>(a)].parent;
    else b = v.nodes[static_cast<size_t>(b)].parent;
  }
  return a >= 0 && a == b ? a : kNoNode;
}

std::string words(const TraceReplay& t, const StepView& v, int32_t n) {
  return "'" + t.token_text(v.nodes[static_cast<size_t>(n)].token) + "' (node " + std::to_string(n) + ")";
}

void flip_mask_bit(json& record, int32_t row, int32_t col) {
  BitMask m = trace_mask_parse(record["forward"]["mask"], "plant");
  m.flip(row, col);
  record["forward"]["mask"] = trace_mask(m);
}

json& step_record(std::vector<json>& recs, int32_t step) {
  for (json& r : recs)
    if (r.value("kind", "") == "step" && r["step"] == step) return r;
  FAIL("no step record " << step);
  throw 0;
}

}  // namespace

TEST_CASE("Figure 1 step 2: parent, prompt ancestor, another branch, a free slot", "[mask][explain]") {
  const auto& s = sample("figure1_once_upon_a_time.json");
  const TraceReplay t(s.records, s.name);
  const StepSource st(t, 2);
  const StepView& v = st.view;
  REQUIRE(v.forward);
  const int32_t was = node_with_token(t, v, "was");
  const int32_t row = static_cast<int32_t>(std::find(v.forward->queries.begin(), v.forward->queries.end(), was) - v.forward->queries.begin());
  REQUIRE(row < v.forward->mask.rows);
  const TreeNode& q = v.nodes[static_cast<size_t>(was)];
  const std::string query = "query 'was' (node " + std::to_string(was) + ", position " + std::to_string(q.depth) + ")";

  // Its parent: 'there' in the paper's figure.
  const int32_t parent = q.parent;
  const int32_t pslot = st.layout.slot_of(parent);
  const MaskCellExplanation p = st.at(row, pslot);
  CHECK(p.relation == CellRelation::parent);
  CHECK(p.bit);
  CHECK(p.agrees);
  CHECK(p.path == std::vector<int32_t>{was, parent});
  CHECK(p.sentence == query + " reads slot " + std::to_string(pslot) + " 'there' (node " + std::to_string(parent) + ", position " +
                          std::to_string(q.depth - 1) + "): its parent");

  // Its grandparent is the prompt's last token.
  const int32_t gp = v.nodes[static_cast<size_t>(parent)].parent;
  const MaskCellExplanation g = st.at(row, st.layout.slot_of(gp));
  CHECK(g.relation == CellRelation::prompt);
  CHECK(g.generations == 2);
  CHECK(g.sentence.find("its grandparent, in the prompt") != std::string::npos);

  // 'in' is on the other branch that survived step 1; they part at 'time'.
  const int32_t in = node_with_token(t, v, "in");
  const int32_t lca = lowest_common_ancestor(v, was, in);
  REQUIRE(t.token_text(v.nodes[static_cast<size_t>(lca)].token) == "time");
  const int32_t islot = st.layout.slot_of(in);
  const MaskCellExplanation b = st.at(row, islot);
  CHECK(b.relation == CellRelation::other_branch);
  CHECK(b.common_ancestor == lca);
  CHECK_FALSE(b.bit);
  CHECK(b.agrees);
  CHECK(b.sentence == query + " does not read slot " + std::to_string(islot) + " 'in' (node " + std::to_string(in) + ", position " +
                          std::to_string(v.nodes[static_cast<size_t>(in)].depth) + "): on another branch (common ancestor " + words(t, v, lca) + ")");
  CHECK(b.path.front() == was);
  CHECK(b.path.back() == in);
  CHECK(std::find(b.path.begin(), b.path.end(), lca) != b.path.end());

  // A sibling written by this same pass: 'lived' under 'there'.
  const int32_t lived = node_with_token(t, v, "lived");
  const MaskCellExplanation sib = st.at(row, st.layout.slot_of(lived));
  CHECK(sib.relation == CellRelation::other_branch);
  CHECK(sib.sibling);
  CHECK(sib.key_writer_row >= 0);
  CHECK(sib.sentence.find("a sibling on another branch (common ancestor " + words(t, v, parent) + ", its parent); written by this pass (row " +
                          std::to_string(sib.key_writer_row) + ")") != std::string::npos);

  // A free slot: the pass's mask one column wider than the slots in use.
  std::vector<json> recs = s.records;
  json& rec = step_record(recs, 2);
  BitMask m = trace_mask_parse(rec["forward"]["mask"], "plant");
  BitMask wide(m.rows, m.cols + 1);
  for (int32_t r = 0; r < m.rows; ++r)
    for (int32_t c = 0; c < m.cols; ++c)
      if (m.test(r, c)) wide.set(r, c);
  rec["forward"]["mask"] = trace_mask(wide);
  const TraceReplay tw(recs, "wide");
  const StepSource sw(tw, 2);
  const MaskCellExplanation f = sw.at(row, m.cols);
  CHECK(f.relation == CellRelation::free_slot);
  CHECK(f.agrees);
  CHECK(f.sentence == query + " does not read slot " + std::to_string(m.cols) + ": slot " + std::to_string(m.cols) + " is free");
}

TEST_CASE("every mask cell of every sample agrees with the tree's ancestry and its bit", "[mask][explain]") {
  std::map<CellRelation, int> seen;
  for (const auto& s : testing::sample_traces()) {
    const TraceReplay t(s.records, s.name);
    const bool copies = mask_copy_layout(t).has_value();
    std::mt19937 rng(20240535);
    for (int32_t step : t.steps()) {
      const StepSource st(t, step);
      if (!st.view.forward) continue;
      const ForwardView& f = *st.view.forward;
      std::vector<std::pair<int32_t, int32_t>> cells;
      if (int64_t{f.mask.rows} * f.mask.cols <= 20000) {
        for (int32_t r = 0; r < f.mask.rows; ++r)
          for (int32_t c = 0; c < f.mask.cols; ++c) cells.emplace_back(r, c);
      } else {
        for (int i = 0; i < 2000; ++i)
          cells.emplace_back(static_cast<int32_t>(rng() % f.mask.rows), static_cast<int32_t>(rng() % f.mask.cols));
      }
      for (auto [r, c] : cells) {
        CAPTURE(s.name, step, r, c);
        const MaskCellExplanation e = st.at(r, c);
        ++seen[e.relation];
        CHECK(e.bit == f.mask.test(r, c));
        CHECK(e.agrees);
        CHECK(e.row_faults.empty());
        CHECK(cell_relation_attends(e.relation) == e.bit);
        CHECK(e.sentence.find("slot " + std::to_string(c)) != std::string::npos);
        if (copies) {
          const int32_t region = st.src.copies->region, copy = e.query_copy, pos = e.query_copy_position;
          CHECK((c / region == copy && c % region <= pos) == cell_relation_attends(e.relation));
          continue;
        }
        const int32_t k = st.layout.node_in_slot(c);
        CHECK(e.key == k);
        if (k < 0) {
          CHECK(e.relation == CellRelation::free_slot);
          continue;
        }
        CHECK(is_ancestor_or_self(st.view, k, e.query) == cell_relation_attends(e.relation));
        CHECK((e.relation == CellRelation::descendant) == (k != e.query && is_ancestor_or_self(st.view, e.query, k)));
        if (e.relation == CellRelation::other_branch) CHECK(e.common_ancestor == lowest_common_ancestor(st.view, e.query, k));
        if (cell_relation_attends(e.relation))
          CHECK(e.generations == st.view.nodes[static_cast<size_t>(e.query)].depth - st.view.nodes[static_cast<size_t>(k)].depth);
        CHECK(e.path.front() == e.query);
        CHECK(e.path.back() == k);
        for (size_t i = 0; i + 1 < e.path.size(); ++i) {
          const TreeNode& a = st.view.nodes[static_cast<size_t>(e.path[i])];
          const TreeNode& b = st.view.nodes[static_cast<size_t>(e.path[i + 1])];
          CHECK((a.parent == b.id || b.parent == a.id));
        }
      }
    }
  }
  // The samples between them show every relation but "no query node".
  for (CellRelation r : {CellRelation::self, CellRelation::parent, CellRelation::ancestor, CellRelation::prompt, CellRelation::descendant,
                         CellRelation::other_branch, CellRelation::not_written, CellRelation::other_copy})
    CHECK(seen[r] > 0);
  CHECK(seen[CellRelation::unknown_query] == 0);
}

TEST_CASE("a batch-layout trace names each row's beam copy and the copy it reads", "[mask][explain]") {
  // The batch decode of Figure 1 holds, in beam j's copy, the path of the
  // trie decode's beam j (the two are the same search).
  const auto& trie = sample("figure1_once_upon_a_time.json");
  const auto& batch = sample("figure1_once_upon_a_time.json+batch");
  const TraceReplay tt(trie.records, trie.name), tb(batch.records, batch.name);
  REQUIRE(mask_copy_layout(tb));
  const int32_t region = mask_copy_layout(tb)->region;
  for (int32_t step : {1, 2}) {
    CAPTURE(step);
    const StepSource st(tb, step);
    const StepView tv = tt.at(step);
    REQUIRE(st.view.forward);
    for (size_t j = 0; j < tv.chosen.size(); ++j) {
      CAPTURE(j);
      std::vector<int32_t> path;
      for (int32_t n = tv.chosen[j]["node"].get<int32_t>(); n >= 0; n = tv.nodes[static_cast<size_t>(n)].parent)
        path.insert(path.begin(), tv.nodes[static_cast<size_t>(n)].token);
      CHECK(st.copy_tokens[j] == path);
      const int32_t row = static_cast<int32_t>(j), pos = static_cast<int32_t>(path.size()) - 1;
      auto tok = [&](int32_t p) { return "'" + tt.token_text(path[static_cast<size_t>(p)]) + "'"; };
      const std::string head = "row " + std::to_string(row) + " (beam " + std::to_string(j) + "'s copy, position " + std::to_string(pos) + " " +
                               tok(pos) + ", slot " + std::to_string(row * region + pos) + ")";
      const MaskCellExplanation parent = st.at(row, row * region + pos - 1);
      const bool in_prompt = pos - 1 < mask_copy_layout(tb)->prompt;
      CHECK(parent.relation == (in_prompt ? CellRelation::prompt : CellRelation::parent));
      CHECK(parent.sentence == head + " reads slot " + std::to_string(row * region + pos - 1) + " (beam " + std::to_string(j) + "'s copy, position " +
                                   std::to_string(pos - 1) + " " + tok(pos - 1) + "): its own copy of its parent" + (in_prompt ? ", in the prompt" : ""));
      const int32_t other = (row + 1) % 3;
      const MaskCellExplanation o = st.at(row, other * region + 1);
      CHECK(o.relation == CellRelation::other_copy);
      CHECK(o.sentence.find("another beam's copy (its own copy of position 1 is slot " + std::to_string(row * region + 1) + ")") != std::string::npos);
      const MaskCellExplanation later = st.at(row, row * region + pos + 1);
      CHECK(later.relation == CellRelation::not_written);
      CHECK(later.sentence.find("not written yet") != std::string::npos);
    }
  }
}

TEST_CASE("a planted fault is shown on exactly its cell with the rule it breaks", "[mask][explain]") {
  struct Case {
    std::string sample;
    bool copies;
  };
  for (const Case& c : {Case{"figure1_once_upon_a_time.json", false}, Case{"figure1_once_upon_a_time.json+batch", true}}) {
    CAPTURE(c.sample);
    std::vector<json> recs = sample(c.sample).records;
    const TraceReplay clean(recs, "clean");
    const StepSource before(clean, 2);
    const BitMask& m = before.view.forward->mask;
    // Row 0 sees a column it must not (the last column row 1 reads).
    int32_t col = -1;
    for (int32_t k = m.cols - 1; k >= 0 && col < 0; --k)
      if (m.test(1, k) && !m.test(0, k)) col = k;
    REQUIRE(col >= 0);
    flip_mask_bit(step_record(recs, 2), 0, col);
    const TraceReplay t(recs, "planted");
    const StepSource st(t, 2);
    int faulty = 0;
    for (int32_t r = 0; r < m.rows; ++r)
      for (int32_t k = 0; k < m.cols; ++k) {
        const MaskCellExplanation e = st.at(r, k);
        if (e.agrees) continue;
        ++faulty;
        CHECK(r == 0);
        CHECK(k == col);
        CHECK(e.bit);
        CHECK_FALSE(cell_relation_attends(e.relation));
        REQUIRE(e.cell_faults.size() == 1);
        CHECK(e.fault_text.find(mask_fault_name(e.cell_faults[0].fault)) != std::string::npos);
        CHECK(e.fault_text.find(c.copies ? "the copy layout" : "the ancestor rule") != std::string::npos);
        CHECK(e.fault_text.find("expected 0, found 1") != std::string::npos);
      }
    CHECK(faulty == 1);
    // A wrong position id is a fault of the row, named on each of its cells.
    step_record(recs, 2)["forward"]["positions"][1] = step_record(recs, 2)["forward"]["positions"][1].get<int32_t>() + 1;
    const TraceReplay tp(recs, "position");
    const StepSource sp(tp, 2);
    const MaskCellExplanation e = sp.at(1, 0);
    REQUIRE(e.row_faults.size() == 1);
    CHECK(e.row_faults[0].fault == MaskFault::wrong_position);
    CHECK(e.fault_text.find("wrong position id") != std::string::npos);
    CHECK(sp.at(2, 0).row_faults.empty());
  }
}
