// The narration pane (gui/panes/narration_pane.*) in the real main window:
// on the Figure 1 trace decoded by run_sample it is the raised tab, it tells
// step 2 with 'far' as a link, a click on the link selects the node in the
// TraceContext, stepping and jumping give the same text, and the exported
// figure carries the sentences.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>

#include <sstream>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "gui/main_window.h"
#include "tests/gui/shown_window.h"
#include "gui/panes/narration_pane.h"

using namespace triescope;
using namespace triescope::gui;

namespace {

TraceDocumentPtr decode_figure1() {
  const std::string path = TRIESCOPE_SOURCE_DIR "/samples/figure1_once_upon_a_time.json";
  Sample s = sample_parse(json_load_file(path), path);
  MemoryTraceSink sink;
  std::ostringstream os;
  run_sample(s, &sink, os);
  return trace_document_from_records(std::move(sink.records), path);
}

using Window = triescope::gui_tests::ShownWindow;

std::string pane_text(const NarrationPane& p) {
  std::string t;
  for (const auto& s : p.sentences()) t += narration_text(s) + "\n";
  return t;
}

// The viewport point of the first character of the link to `href`, or (-1, -1).
QPoint link_point(QTextBrowser* b, const QString& href) {
  for (QTextBlock blk = b->document()->begin(); blk.isValid(); blk = blk.next())
    for (auto it = blk.begin(); !it.atEnd(); ++it) {
      const QTextFragment f = it.fragment();
      if (f.charFormat().anchorHref() != href) continue;
      QTextCursor c(b->document());
      c.setPosition(f.position() + 1);
      return b->cursorRect(c).center();
    }
  return {-1, -1};
}

}  // namespace

TEST_CASE("gui narration: Figure 1 step 2 is told in the raised pane, and a click on 'far' selects it", "[gui][narration]") {
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(decode_figure1());
  QApplication::processEvents();
  NarrationPane* pane = win.w.narrationPane();
  REQUIRE(pane);
  CHECK(pane->isVisible());  // the raised tab of its dock group, not a hidden one
  auto* dock = qobject_cast<QDockWidget*>(pane->parentWidget());
  REQUIRE(dock);
  CHECK(dock->windowTitle() == QStringLiteral("Narration"));

  ctx.setStep(1);
  ctx.setStep(2);
  QApplication::processEvents();
  const std::string told = pane_text(*pane);
  CAPTURE(told);
  CHECK(told.find("'far' #6 dropped out") != std::string::npos);
  CHECK(told.find("which held 'far' #6") != std::string::npos);
  CHECK(told.find("Step 2 (expand)") == 0);

  // A click on the link selects the node in the context.
  REQUIRE(ctx.selectedNode() != 6);
  CHECK_FALSE(pane->browser()->toHtml().contains(QStringLiteral("#cfe3ff")));
  const QPoint at = link_point(pane->browser(), NarrationPane::nodeHref(6));
  REQUIRE(at.x() >= 0);
  QTest::mouseClick(pane->browser()->viewport(), Qt::LeftButton, {}, at);
  QApplication::processEvents();
  CHECK(ctx.selectedNode() == 6);
  // The selection is marked in the pane's text too.
  CHECK(pane->browser()->toHtml().contains(QStringLiteral("#cfe3ff")));

  // Stepping forward then back, and a jump in a fresh window, tell step 2 the same.
  ctx.setStep(3);
  ctx.setStep(2);
  CHECK(pane_text(*pane) == told);
  Window fresh;
  fresh.w.context().setTraces(decode_figure1());
  fresh.w.context().setStep(2);
  CHECK(pane_text(*fresh.w.narrationPane()) == told);
}

TEST_CASE("gui narration: the exported figure holds the sentences", "[gui][narration]") {
  Window win;
  win.w.context().setTraces(decode_figure1());
  win.w.context().setStep(2);
  QApplication::processEvents();
  const NarrationPane* pane = win.w.narrationPane();
  CHECK(pane->figureName() == QStringLiteral("narration"));
  CHECK(pane->figureSize().height() > 40);
  QTemporaryDir dir;
  const QString svg = dir.filePath(QStringLiteral("narration.svg"));
  QString error;
  REQUIRE(win.w.exportPane(QStringLiteral("narration"), svg, {}, &error));
  QFile f(svg);
  REQUIRE(f.open(QIODevice::ReadOnly));
  const QByteArray text = f.readAll();
  CHECK(text.contains("dropped out"));
  CHECK(text.contains("far"));
}
