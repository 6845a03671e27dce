// The panes on a real trace (trie paper Figure 1, run in-process through
// run_sample): mask pixels, linked selection, diff marks, export, errors.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QGraphicsView>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "gui/chosen_beams_model.h"
#include "gui/json_tree_model.h"
#include "gui/main_window.h"
#include "tests/gui/shown_window.h"
#include "gui/panes/beams_pane.h"
#include "gui/panes/json_pane.h"
#include "gui/panes/kv_view.h"
#include "gui/panes/mask_view.h"
#include "gui/panes/plots_pane.h"
#include "gui/panes/trie_view.h"
#include "gui/panes/verify_pane.h"
#include "gui/step_colors.h"

using namespace triescope;
using namespace triescope::gui;

namespace {
const char* kFig1 = TRIESCOPE_SOURCE_DIR "/samples/figure1_once_upon_a_time.json";

std::vector<json> fig1_records() {
  MemoryTraceSink sink;
  Sample s = sample_load(kFig1);
  std::ostringstream os;
  run_sample(s, &sink, os);
  return sink.records;
}

TraceDocumentPtr fig1() {
  static TraceDocumentPtr d = trace_document_from_records(fig1_records(), "fig1");
  return d;
}

// A window with fixed geometry, no dialogs, shown offscreen.
using Window = triescope::gui_tests::ShownWindow;

QColor pixel(QWidget* viewport, QPoint p) { return viewport->grab().toImage().pixelColor(p); }

bool near(const QColor& a, const QColor& b, int tol = 6) {
  return std::abs(a.red() - b.red()) <= tol && std::abs(a.green() - b.green()) <= tol && std::abs(a.blue() - b.blue()) <= tol;
}

// Cell (row of `query`, slot of `key`) at step `step`.
std::pair<int, int> cell(const TraceContext& ctx, int query, int key) { return {ctx.rowOfNode(query), ctx.slotOfNode(key)}; }
}  // namespace

TEST_CASE("mask pane paints a known allowed and a known forbidden cell", "[gui][mask]") {
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(fig1());
  ctx.setStep(2);
  const StepView& v = ctx.view();
  REQUIRE(v.forward);
  // Step 2 of Figure 1: "was" (node 7) extends "there" (4); "in" (5) is another branch.
  REQUIRE(v.nodes[7].parent == 4);
  REQUIRE(v.nodes[5].parent == v.nodes[4].parent);
  const auto [r, allowedCol] = cell(ctx, 7, 4);
  const int forbiddenCol = ctx.slotOfNode(5);
  REQUIRE(r >= 0);
  REQUIRE(v.forward->mask.test(r, allowedCol));
  REQUIRE_FALSE(v.forward->mask.test(r, forbiddenCol));
  MaskView* m = win.w.maskView();
  m->setCellSize(20);
  QApplication::processEvents();
  const double zoom = GENERATE(20.0, 7.0);
  CAPTURE(zoom);
  m->setCellSize(zoom);
  CHECK(near(pixel(m->viewport(), m->cellCenter(r, allowedCol)), kMaskAllowed));
  CHECK(near(pixel(m->viewport(), m->cellCenter(r, forbiddenCol)), kMaskForbidden));
  CHECK(m->cellAt(m->cellCenter(r, forbiddenCol)) == qMakePair(r, forbiddenCol));
  // The tooltip says why.
  CHECK(m->cellExplanation(r, allowedCol).contains("ALLOWED"));
  CHECK(m->cellExplanation(r, allowedCol).contains("is an ancestor of the query"));
  CHECK(m->cellExplanation(r, forbiddenCol).contains("not allowed"));
  CHECK(m->cellExplanation(r, forbiddenCol).contains("not an ancestor"));
  CHECK_FALSE(m->cellExplanation(r, forbiddenCol).contains("disagrees"));
}

TEST_CASE("selection is linked across trie and mask and KV and beams panes", "[gui][selection]") {
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(fig1());
  ctx.setStep(2);
  QApplication::processEvents();
  MaskView* m = win.w.maskView();
  m->setCellSize(20);
  QApplication::processEvents();

  SECTION("trie click selects the node; mask row/column and the beams row follow") {
    TrieView* t = win.w.trieView();
    const QPointF sp = t->nodeScenePos(7);
    REQUIRE_FALSE(std::isnan(sp.x()));
    QGraphicsView* gv = t->graphicsView();
    gv->centerOn(sp);
    QTest::mouseClick(gv->viewport(), Qt::LeftButton, {}, gv->mapFromScene(sp));
    REQUIRE(ctx.selectedNode() == 7);
    const int row = ctx.rowOfNode(7), col = ctx.slotOfNode(7);
    CHECK(row == 0);
    CHECK(col == ctx.view().forward->slots[0]);
    // A masked cell in the selected row is tinted, one in another row is not.
    const int otherFree = ctx.slotOfNode(5);
    CHECK_FALSE(near(pixel(m->viewport(), m->cellCenter(row, otherFree)), kMaskForbidden));
    CHECK(near(pixel(m->viewport(), m->cellCenter(2, otherFree)), kMaskForbidden));
    auto* beams = win.w.beamsPane();
    REQUIRE(beams->table()->selectionModel()->selectedRows().size() == 1);
    CHECK(beams->model()->data(beams->table()->selectionModel()->selectedRows().front(), ChosenBeamsModel::NodeIdRole).toInt() == 7);
  }
  SECTION("mask cell click selects its query node") {
    QTest::mouseClick(m->viewport(), Qt::LeftButton, {}, m->cellCenter(2, 0));
    CHECK(ctx.selectedNode() == ctx.view().forward->queries[2]);
  }
  SECTION("KV slot click selects the node in the slot") {
    KvView* kv = win.w.kvView();
    const int slot = ctx.slotOfNode(4);
    QTest::mouseClick(kv, Qt::LeftButton, {}, kv->slotRect(slot).center());
    CHECK(ctx.selectedNode() == 4);
    CHECK(ctx.nodeInSlot(slot) == 4);
  }
  SECTION("beams table selects the chosen node") {
    auto* beams = win.w.beamsPane();
    beams->table()->selectRow(2);
    CHECK(ctx.selectedNode() == ctx.view().chosen[2]["node"].get<int>());
  }
}

TEST_CASE("diff mode marks exactly the planted divergences", "[gui][diff]") {
  std::vector<json> a = fig1_records(), b = a;
  // Plant two divergences: one mask bit at step 2 and one token at step 1.
  size_t step1 = 0, step2 = 0;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i]["kind"] == "step") (b[i]["step"] == 1 ? step1 : b[i]["step"] == 2 ? step2 : i) = i;
  REQUIRE(step1 > 0);
  REQUIRE(step2 > 0);
  const int row = 1, col = 3;
  BitMask mk = trace_mask_parse(b[step2]["forward"]["mask"], "test");
  mk.flip(row, col);
  b[step2]["forward"]["mask"] = trace_mask(mk);
  const int plantedNode = b[step1]["added"][1]["id"].get<int>();
  b[step1]["added"][1]["token"] = b[step1]["added"][1]["token"].get<int>() + 1;

  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(trace_document_from_records(a, "A.jsonl"), trace_document_from_records(b, "B.jsonl"));
  REQUIRE(ctx.diffMode());
  // The same function as `triescope diff`.
  const auto first = trace_diff(a, b);
  REQUIRE(first);
  REQUIRE(ctx.divergences().size() == 2);
  CHECK(ctx.divergences().front().describe() == first->describe());

  REQUIRE(ctx.marksAt(0) == nullptr);
  const StepMarks* m1 = ctx.marksAt(1);
  REQUIRE(m1);
  CHECK(m1->nodes == std::set<int32_t>{plantedNode});
  CHECK(m1->mask_cells.empty());
  const StepMarks* m2 = ctx.marksAt(2);
  REQUIRE(m2);
  CHECK(m2->mask_cells == std::set<std::pair<int32_t, int32_t>>{{row, col}});
  CHECK(m2->nodes == std::set<int32_t>{a[step2]["forward"]["queries"][row].get<int32_t>()});
  CHECK(ctx.marksAt(3) == nullptr);

  // Next divergence walks 1 -> 2 -> wraps to 1.
  ctx.setStep(0);
  CHECK(ctx.nextDivergenceStep() == 1);
  ctx.setStep(1);
  CHECK(ctx.nextDivergenceStep() == 2);
  ctx.setStep(2);
  CHECK(ctx.nextDivergenceStep() == 1);
  CHECK(ctx.prevDivergenceStep() == 1);

  // The marked cell is drawn in the diff colour in both A and B; an unmarked one is not.
  MaskView* mv = win.w.maskView();
  mv->setCellSize(24);
  QApplication::processEvents();
  for (auto side : {TraceContext::A, TraceContext::B}) {
    CAPTURE(int(side));
    ctx.setShownSide(side);
    CHECK(near(pixel(mv->viewport(), mv->cellCenter(row, col)), kDiffMark, 30));
    CHECK_FALSE(near(pixel(mv->viewport(), mv->cellCenter(0, col)), kDiffMark, 30));
  }
  // B really holds the flipped bit.
  CHECK(ctx.viewOf(TraceContext::A)->forward->mask.test(row, col) != ctx.viewOf(TraceContext::B)->forward->mask.test(row, col));

  SECTION("identical traces: no divergence, no marks") {
    ctx.setTraces(trace_document_from_records(a, "A"), trace_document_from_records(a, "A2"));
    CHECK(ctx.divergences().empty());
    CHECK(ctx.nextDivergenceStep() == -1);
    CHECK(ctx.marks().empty());
  }
}

TEST_CASE("trie view lays out with dot and falls back to tidy and collapses the prompt", "[gui][trie]") {
  Window win;
  TraceContext& ctx = win.w.context();
  TrieView* t = win.w.trieView();
  ctx.setTraces(fig1());
  ctx.setStep(3);
  const int total = static_cast<int>(ctx.view().nodes.size());
  CHECK(t->engine() == layout::LayoutEngine::dot);
  // The 4-token prompt chain folds into its last token.
  CHECK(t->shownNodeCount() == total - 3);
  t->setCollapsePrompt(false);
  CHECK(t->shownNodeCount() == total);
  t->setMaxDotNodes(5);
  ctx.setStep(2);
  CHECK(t->engine() == layout::LayoutEngine::tidy);
  for (int id = 0; id < static_cast<int>(ctx.view().nodes.size()); ++id) {
    CAPTURE(id);
    CHECK(t->nodeAtScenePos(t->nodeScenePos(id)) == id);
  }
}

TEST_CASE("KV pane draws GC moves and counts and plots cover every step", "[gui][kv]") {
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(fig1());
  ctx.setStep(2);  // Figure 1: g = 2, GC runs at step 2
  REQUIRE_FALSE(ctx.view().gc_moves.empty());
  KvView* kv = win.w.kvView();
  CHECK(kv->oldSlotRect(0).top() < kv->slotRect(0).top());
  CHECK(kv->headerText().contains(QStringLiteral("batch baseline: %1 slots").arg(ctx.view().kv.value().batch_slots.value())));
  CHECK(win.w.plotsPane()->seriesPointCount(0) == static_cast<int>(ctx.steps().size()));
  CHECK(win.w.plotsPane()->seriesPointCount(1) == static_cast<int>(ctx.steps().size()));
  // No constraint / verify records in this trace: the panes say so.
  CHECK_FALSE(win.w.constraintPane()->hasData());
  CHECK_FALSE(win.w.verifyPane()->hasData());
}

TEST_CASE("constraint and verify panes show the step record's extras", "[gui][constraint]") {
  std::vector<json> recs = fig1_records();
  for (auto& r : recs)
    if (r["kind"] == "step" && r["step"] == 1) {
      r["constraint"] = {{"beams", json::array({{{"state", 2}, {"valid", 5}, {"path", "dense"}}})}};
      r["verify"] = {{"kind", "dsbd_layers"}, {"layers", json::array({{{"width", 3}, {"accepted", 2}}})}};
    }
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(trace_document_from_records(recs, "x"));
  ctx.setStep(1);
  CHECK(win.w.constraintPane()->hasData());
  CHECK(win.w.verifyPane()->hasData());
  CHECK(win.w.constraintPane()->model()->rowCount() == 1);
  ctx.setStep(2);
  CHECK_FALSE(win.w.constraintPane()->hasData());
}

TEST_CASE("export PNG and SVG and step JSON and errors name the file and field", "[gui][export]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(fig1());
  ctx.setStep(2);
  QApplication::processEvents();
  for (const char* pane : {"trie", "mask", "kv"}) {
    for (const char* ext : {"png", "svg"}) {
      CAPTURE(pane, ext);
      const QString p = dir.filePath(QStringLiteral("%1.%2").arg(pane, ext));
      QString err;
      REQUIRE(win.w.exportPane(pane, p, {}, &err));
      CHECK(err.isEmpty());
      QFile f(p);
      REQUIRE(f.open(QIODevice::ReadOnly));
      const QByteArray head = f.read(64);
      CHECK((QString(ext) == "png" ? head.startsWith("\x89PNG") : head.contains("<?xml")));
      CHECK_FALSE(QFile::exists(p + ".tmp"));
    }
  }
  const QString js = dir.filePath("step.json");
  REQUIRE(win.w.exportStepJson(js));
  const json j = json_load_file(js.toStdString());
  CHECK(j["step"] == 2);
  size_t expected = 0;
  for (const auto& r : fig1()->replay->records())
    if (r.contains("step") && r["step"] == 2) ++expected;
  CHECK(expected >= 2);  // gc and step at least (Figure 1 runs GC at step 2)
  CHECK(j["records"].size() == expected);
  QString err;
  CHECK_FALSE(win.w.exportStepJson(dir.filePath("no/such/dir/x.json"), &err));
  CHECK(err.contains("no/such/dir/x.json"));

  SECTION("a bad trace is reported with file and field, not a crash") {
    const QString bad = dir.filePath("bad.jsonl");
    QFile f(bad);
    REQUIRE(f.open(QIODevice::WriteOnly));
    f.write("{\"kind\":\"header\",\"schema\":\"triescope.trace\",\"version\":99}\n");
    f.close();
    QSignalSpy spy(&win.w, &MainWindow::loadFinished);
    win.w.openTrace(bad);
    REQUIRE(spy.wait(10000));
    CHECK_FALSE(spy.front()[0].toBool());
    const QString msg = spy.front()[1].toString();
    CHECK(msg.contains("bad.jsonl"));
    CHECK(msg.contains("version"));
    // The trace shown before stays loaded.
    CHECK(ctx.loaded());
  }
}

TEST_CASE("loading off the UI thread opens a file and runs a sample live", "[gui][load]") {
  QTemporaryDir dir;
  Window win;
  const QString p = dir.filePath("fig1.jsonl");
  {
    TraceFileWriter w(p.toStdString());
    for (const auto& r : fig1_records()) w.record(r);
    w.commit();
  }
  QSignalSpy spy(&win.w, &MainWindow::loadFinished);
  win.w.openTrace(p);
  CHECK(win.w.loading());
  REQUIRE(spy.wait(10000));
  CHECK(spy.front()[0].toBool());
  CHECK(win.w.context().steps().size() == fig1()->replay->steps().size());
  CHECK(win.w.statusText().contains("step 0"));
  spy.clear();
  // Live: the sample with beam width 2 instead of 3 (edited before validation).
  win.w.runSample(kFig1, [](json& j) { j["beam"]["num_beams"] = 2; });
  REQUIRE(spy.wait(10000));
  REQUIRE(spy.front()[0].toBool());
  win.w.context().setStep(1);
  CHECK(win.w.context().view().kv.value().live_beams == 2);
  spy.clear();
  win.w.runSample(kFig1, [](json& j) { j["beam"]["num_beams"] = 0; });
  REQUIRE(spy.wait(10000));
  CHECK_FALSE(spy.front()[0].toBool());
  CHECK(spy.front()[1].toString().contains("num_beams"));
}

TEST_CASE("live run shows the decode while it runs", "[gui][load][live]") {
  Window win;
  TraceContext& ctx = win.w.context();
  QSignalSpy spy(&win.w, &MainWindow::loadFinished);
  // Long enough (2-6 s on the development machine) for the 250 ms poll to
  // show a partial trace before the run ends.
  win.w.runSample(TRIESCOPE_SOURCE_DIR "/samples/synthetic_long.json", [](json& j) {
    j["beam"]["max_new_tokens"] = 1500;
    j["beam"]["num_beams"] = 4;
  });
  size_t partial = 0;
  while (spy.isEmpty()) {
    spy.wait(50);
    if (spy.isEmpty() && ctx.loaded()) partial = std::max(partial, ctx.steps().size());
  }
  REQUIRE(spy.front()[0].toBool());
  CAPTURE(partial, ctx.steps().size());
  // A trace was on screen before the run finished (run_sample also decodes
  // the batch baseline after the trie run, so the snapshot may be complete).
  CHECK(partial > 0);
  CHECK(ctx.steps().size() == 1501);  // prefill + 1500 expand steps
  CHECK(ctx.step() == ctx.steps().back());  // followed the decode to its end
}

// The trie pane keeps at most a few layouts and refills an evicted one's
// buffers; the mask pane keeps its bitmap between paints; the context
// refills a spare view on the first step forward. None of it may leak one
// step's picture into another: stepping forward, back and by jumps through
// more steps than the layout cache holds gives, at every step, the same node
// positions as a window that opened the trace at that step, and mask pixels
// that match the step's own bits.
TEST_CASE("reused layout, view and bitmap buffers never show another step's data", "[gui][trie][mask]") {
  MemoryTraceSink sink;
  {
    Sample s = sample_load(TRIESCOPE_SOURCE_DIR "/samples/synthetic_long.json");
    std::ostringstream os;
    run_sample(s, &sink, os);
  }
  const TraceDocumentPtr doc = trace_document_from_records(sink.records, "synthetic_long");
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(doc);
  MaskView* m = win.w.maskView();
  QApplication::processEvents();
  m->setCellSize(7);
  // Scrolls column `col` of row 0 into view and returns its pixel.
  auto cellPixel = [m](int col) {
    m->verticalScrollBar()->setValue(0);
    m->horizontalScrollBar()->setValue(std::max(0, static_cast<int>(col * m->cellSize()) - 40));
    QApplication::processEvents();
    const QPoint c = m->cellCenter(0, col);
    REQUIRE(m->gridRect().contains(c));
    return pixel(m->viewport(), c);
  };
  std::vector<int32_t> order;
  for (int32_t s = 1; s <= 20; ++s) order.push_back(s);   // forward: spare view, then refills
  for (int32_t s = 19; s >= 8; --s) order.push_back(s);   // back: kept views, cached and evicted layouts
  for (int32_t s : {40, 3, 41, 42, 12, 0, 60}) order.push_back(s);  // jumps
  for (int32_t s : order) {
    CAPTURE(s);
    ctx.setStep(s);
    QApplication::processEvents();
    TrieView* t = win.w.trieView();
    Window fresh;
    fresh.w.context().setTraces(doc);
    fresh.w.context().setStep(s);
    TrieView* ft = fresh.w.trieView();
    REQUIRE(ctx.view().nodes.size() == fresh.w.context().view().nodes.size());
    CHECK(t->engine() == ft->engine());
    CHECK(t->shownNodeCount() == ft->shownNodeCount());
    int same = 0, shown = 0;
    for (int32_t id = 0; id < static_cast<int32_t>(ctx.view().nodes.size()); ++id) {
      const QPointF a = t->nodeScenePos(id), b = ft->nodeScenePos(id);
      if (std::isnan(b.x())) {
        CHECK(std::isnan(a.x()));
        continue;
      }
      ++shown;
      same += std::abs(a.x() - b.x()) < 1e-6 && std::abs(a.y() - b.y()) < 1e-6;
    }
    CHECK(same == shown);
    // The mask: the first row's own slot attends; a slot it may not read is masked.
    const StepView& v = ctx.view();
    if (!v.forward || v.forward->mask.rows == 0) continue;
    const int32_t q = v.forward->queries[0];
    const int own = ctx.forwardSlotOfNode(q);
    REQUIRE(own >= 0);
    REQUIRE(v.forward->mask.test(0, own));
    CHECK(near(cellPixel(own), kMaskAllowed));
    for (int col = 0; col < v.forward->mask.cols; ++col)
      if (!v.forward->mask.test(0, col)) {
        CAPTURE(col);
        CHECK(near(cellPixel(col), kMaskForbidden));
        break;
      }
  }
}
