// Every mask cell explained, in the real panes: hovering a cell of the
// Figure 1 mask highlights its tree path in the trie view and its slots in
// the KV view and the tooltip names the nodes; a click pins the explanation
// under the mask; every bundled sample (and the batch layout) stepped
// through with cells pinned; a planted fault drawn on its cell.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QTest>

#include <random>
#include <sstream>

#include "core/decode/run_sample.h"
#include "core/trace/trace.h"
#include "gui/main_window.h"
#include "tests/gui/shown_window.h"
#include "gui/panes/kv_view.h"
#include "gui/panes/mask_view.h"
#include "gui/panes/trie_view.h"
#include "gui/step_colors.h"
#include "tests/core/sample_traces.h"

using namespace triescope;
using namespace triescope::gui;

namespace {

const testing::SampleTrace& sample(const std::string& name) { return testing::sample_trace(name); }

TraceDocumentPtr doc_of(const std::string& name) { return trace_document_from_records(sample(name).records, name); }

using Window = triescope::gui_tests::ShownWindow;

int32_t node_with_token(const TraceDocument& d, const StepView& v, const std::string& text) {
  for (const TreeNode& n : v.nodes)
    if (d.replay->token_text(n.token) == text) return n.id;
  FAIL("no node " << text);
  return -1;
}

bool near(const QColor& a, const QColor& b, int tol = 40) {
  return std::abs(a.red() - b.red()) <= tol && std::abs(a.green() - b.green()) <= tol && std::abs(a.blue() - b.blue()) <= tol;
}

}  // namespace

TEST_CASE("hovering and clicking a Figure 1 mask cell highlights its path and slots", "[gui][mask][explain]") {
  Window win;
  TraceContext& ctx = win.w.context();
  const TraceDocumentPtr doc = doc_of("figure1_once_upon_a_time.json");
  ctx.setTraces(doc);
  ctx.setStep(2);
  QApplication::processEvents();
  const StepView& v = ctx.view();
  REQUIRE(v.forward);
  MaskView* m = win.w.maskView();
  m->setCellSize(24);
  QApplication::processEvents();
  const int32_t was = node_with_token(*doc, v, "was"), in = node_with_token(*doc, v, "in");
  const int32_t there = v.nodes[static_cast<size_t>(was)].parent, time = v.nodes[static_cast<size_t>(there)].parent;
  REQUIRE(v.nodes[static_cast<size_t>(in)].parent == time);
  const int row = ctx.rowOfNode(was), inCol = ctx.forwardSlotOfNode(in), thereCol = ctx.forwardSlotOfNode(there);
  REQUIRE(m->cellAt(m->cellCenter(row, inCol)) == qMakePair(row, inCol));

  // Hover: the highlight is the cell's, the trie draws was - there - time - in,
  // the KV pane frames the key's slot (gold) and the query's.
  QTest::mouseMove(m->viewport(), m->cellCenter(row, inCol));
  QApplication::processEvents();
  const MaskCellHighlight& h = ctx.highlight();
  CHECK(h.row == row);
  CHECK(h.col == inCol);
  CHECK(h.path == std::vector<int32_t>{was, there, time, in});
  CHECK(win.w.trieView()->highlightedNodes() == h.path);
  const auto slots = win.w.kvView()->highlightedSlots();
  REQUIRE(slots.size() == 2);
  CHECK(slots[0].first == ctx.slotOfNode(in));
  CHECK(slots[1].first == ctx.slotOfNode(was));
  win.w.kvView()->repaint();
  const QImage kv = win.w.kvView()->grab().toImage();
  const QRect frame = slots[0].second.adjusted(-2, -2, 2, 2);
  CHECK(near(kv.pixelColor(frame.left(), frame.center().y()), kCellHighlight));
  // The tooltip names both nodes and where their branches part.
  const QString tip = m->cellExplanation(row, inCol);
  CHECK(tip.contains(QStringLiteral("query 'was' (node %1, position 5) does not read slot %2 'in' (node %3, position 4)").arg(was).arg(inCol).arg(in)));
  CHECK(tip.contains(QStringLiteral("on another branch (common ancestor 'time' (node %1))").arg(time)));
  CHECK(tip.contains("not an ancestor"));
  CHECK_FALSE(tip.contains(QChar(0x2717)));  // no fault on a real trace

  // Click: selects the query, pins the explanation under the mask.
  QTest::mouseClick(m->viewport(), Qt::LeftButton, {}, m->cellCenter(row, thereCol));
  QApplication::processEvents();
  CHECK(ctx.selectedNode() == was);
  CHECK(m->pinnedText() == QStringLiteral("query 'was' (node %1, position 5) reads slot %2 'there' (node %3, position 4): its parent").arg(was).arg(thereCol).arg(there));
  CHECK(ctx.highlight().path == std::vector<int32_t>{was, there});
  // Hovering elsewhere and leaving goes back to the pinned cell.
  QTest::mouseMove(m->viewport(), m->cellCenter(row + 1, inCol));
  CHECK(ctx.highlight().row == row + 1);
  QTest::mouseMove(m->viewport(), m->cellCenter(row, inCol));
  CHECK(ctx.highlight().col == inCol);
  QEvent leave(QEvent::Leave);
  QApplication::sendEvent(m, &leave);
  CHECK(ctx.highlight().col == thereCol);
  // Another step drops it.
  ctx.setStep(1);
  CHECK(ctx.highlight().empty());
  CHECK(win.w.trieView()->highlightedNodes().empty());
  CHECK(win.w.kvView()->highlightedSlots().empty());
}

TEST_CASE("every sample's mask cells are explained in the panes", "[gui][mask][explain]") {
  TraceContext ctx;
  MaskView mask(ctx);
  TrieView trie(ctx);
  KvView kv(ctx);
  mask.resize(900, 600);
  trie.resize(900, 600);
  kv.resize(900, 300);
  mask.show();
  std::set<std::string> layouts;
  for (const auto& s : testing::sample_traces()) {
    CAPTURE(s.name);
    ctx.setTraces(trace_document_from_records(s.records, s.name));
    const bool copies = s.records.front().value("algorithm", "") == "batch_beam_search";
    layouts.insert(copies ? "copies" : "tree");
    std::mt19937 rng(35);
    for (int32_t step : ctx.steps()) {
      ctx.setStep(step);
      const StepView& v = ctx.view();
      if (!v.forward) continue;
      const ForwardView& f = *v.forward;
      CAPTURE(step);
      CHECK(mask.faultCells().empty());
      CHECK(mask.faultRows().empty());
      // Each row's own slot, then random cells: at most 24 per step.
      std::vector<std::pair<int, int>> cells;
      for (int r = 0; r < f.mask.rows && cells.size() < 8; ++r) cells.emplace_back(r, f.slots[static_cast<size_t>(r)]);
      while (cells.size() < 24) cells.emplace_back(int(rng() % f.mask.rows), int(rng() % f.mask.cols));
      for (auto [r, c] : cells) {
        CAPTURE(r, c);
        mask.pinCell(r, c);
        const MaskCellExplanation e = mask.explain(r, c);
        const MaskCellHighlight& h = ctx.highlight();
        CHECK(h.row == r);
        CHECK(h.col == c);
        CHECK(h.path == e.path);
        CHECK(mask.pinnedText() == QString::fromStdString(e.sentence));
        CHECK(e.agrees);
        CHECK(cell_relation_attends(e.relation) == f.mask.test(r, c));
        CHECK(mask.cellExplanation(r, c).contains(QString::fromStdString(e.sentence)));
        if (copies) {
          CHECK(e.query_copy >= 0);
          CHECK(e.sentence.find("beam " + std::to_string(e.query_copy) + "'s copy") != std::string::npos);
          continue;
        }
        // Tree layouts: the sentence names the query node; the trie draws
        // the path's shown nodes; the KV pane the key's slot.
        CHECK(e.query == f.queries[static_cast<size_t>(r)]);
        CHECK(e.sentence.find("(node " + std::to_string(e.query) + ", position " + std::to_string(f.positions[static_cast<size_t>(r)]) + ")") !=
              std::string::npos);
        if (e.key >= 0) CHECK(e.sentence.find("(node " + std::to_string(e.key) + ", position ") != std::string::npos);
        for (int32_t n : trie.highlightedNodes()) CHECK(std::find(e.path.begin(), e.path.end(), n) != e.path.end());
        if (!std::isnan(trie.nodeScenePos(e.query).x())) {
          const auto shown = trie.highlightedNodes();
          CHECK(std::find(shown.begin(), shown.end(), e.query) != shown.end());
        }
        const auto slots = kv.highlightedSlots();
        const int grid = ctx.forwardBeforeGc() && v.gc_slots_before > 0 ? v.gc_slots_before : static_cast<int>(v.slot_to_node.size());
        if (c < grid) {
          REQUIRE(!slots.empty());
          CHECK(slots.front().first == c);
        }
      }
    }
  }
  CHECK(layouts == std::set<std::string>{"copies", "tree"});
}

TEST_CASE("a planted mask fault is drawn on its cell with the rule it breaks", "[gui][mask][explain]") {
  std::vector<json> recs = sample("figure1_once_upon_a_time.json").records;
  const TraceReplay clean(recs, "clean");
  const StepView v = clean.at(2);
  // Row 0 reads a slot only row 1 may read.
  int col = -1;
  for (int k = v.forward->mask.cols - 1; k >= 0 && col < 0; --k)
    if (v.forward->mask.test(1, k) && !v.forward->mask.test(0, k)) col = k;
  REQUIRE(col >= 0);
  for (json& r : recs)
    if (r.value("kind", "") == "step" && r["step"] == 2) {
      BitMask m = trace_mask_parse(r["forward"]["mask"], "plant");
      m.flip(0, col);
      r["forward"]["mask"] = trace_mask(m);
    }
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(trace_document_from_records(recs, "planted"));
  ctx.setStep(2);
  MaskView* m = win.w.maskView();
  m->setCellSize(24);
  QApplication::processEvents();
  CHECK(m->faultCells() == std::set<std::pair<int32_t, int32_t>>{{0, col}});
  const QString tip = m->cellExplanation(0, col);
  CHECK(tip.contains("breaks the ancestor rule (a token attends to exactly its ancestors and itself): sees"));
  CHECK(tip.contains("expected 0, found 1"));
  CHECK_FALSE(m->cellExplanation(1, col).contains(QChar(0x2717)));
  // Drawn: the cell's red frame, and a click pins the fault with the sentence.
  const QImage img = m->viewport()->grab().toImage();
  const QPoint c = m->cellCenter(0, col);
  CHECK(near(img.pixelColor(c.x() - 12 + 1, c.y() + 4), kRuleViolation, 60));
  QTest::mouseClick(m->viewport(), Qt::LeftButton, {}, c);
  CHECK(m->pinnedText().startsWith(QChar(0x2717)));
  CHECK(m->pinnedText().contains("sees"));
  CHECK(ctx.highlight().violation);
}
