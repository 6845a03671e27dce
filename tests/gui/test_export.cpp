// Figures for slides: every pane exported as SVG (vector, text as <text>) and
// PNG at a chosen size, from the API the command line uses; named errors and
// no half-written files; the start page's paper-figure samples.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QXmlStreamReader>

#include <algorithm>
#include <filesystem>

#include "core/config/json_reader.h"
#include "gui/export/mask_figure.h"
#include "gui/main_window.h"
#include "tests/gui/shown_window.h"
#include "gui/panes/trie_view.h"
#include "gui/start_page.h"
#include "gui/step_colors.h"
#include "tests/core/sample_traces.h"

using namespace triescope;
using namespace triescope::gui;

namespace {

using Window = triescope::gui_tests::ShownWindow;

// What an SVG file holds: its root element, the text of every <text>
// element, and how many <image> elements (bitmaps) it embeds.
struct SvgContent {
  QString root;
  QStringList texts;
  int images = 0;
  QString error;
};

SvgContent read_svg(const QString& path) {
  SvgContent out;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    out.error = "cannot open";
    return out;
  }
  QXmlStreamReader xml(&f);
  while (!xml.atEnd()) {
    if (xml.readNext() != QXmlStreamReader::StartElement) continue;
    if (out.root.isEmpty()) out.root = xml.name().toString();
    if (xml.name() == QLatin1String("image")) ++out.images;
    if (xml.name() == QLatin1String("text")) out.texts << xml.readElementText(QXmlStreamReader::IncludeChildElements).simplified();
  }
  if (xml.hasError()) out.error = xml.errorString();
  return out;
}

std::vector<std::string> bundled_samples() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(TRIESCOPE_SOURCE_DIR "/samples"))
    if (e.path().extension() == ".json" && !triescope::testing::sample_needs_optional_model(json_load_file(e.path().string())))
      paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

QStringList files_in(const QString& dir) { return QDir(dir).entryList(QDir::Files | QDir::Hidden); }

}  // namespace

TEST_CASE("the mask figure draws every row label, column label and key position as text", "[gui][export]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(trace_document_run_sample(TRIESCOPE_SOURCE_DIR "/samples/figure1_once_upon_a_time.json"));
  ctx.setStep(2);
  const StepView& v = ctx.view();
  REQUIRE(v.forward);
  const QString p = dir.filePath("mask.svg");
  QString err;
  REQUIRE(win.w.exportPane("mask", p, {}, &err));
  const SvgContent svg = read_svg(p);
  REQUIRE(svg.error.isEmpty());
  CHECK(svg.root == "svg");
  CHECK(svg.images == 0);  // vector: cells are rectangles
  const TraceReplay& replay = *ctx.shownDoc()->replay;
  for (size_t r = 0; r < v.forward->queries.size(); ++r) {
    const int32_t q = v.forward->queries[r];
    const QString label = QStringLiteral("#%1 %2 p%3").arg(q).arg(token_label(replay, v.nodes[size_t(q)].token, 10)).arg(v.forward->positions[r]);
    CAPTURE(label.toStdString());
    CHECK(svg.texts.contains(label));
  }
  for (int c = 0; c < v.forward->mask.cols; ++c) {
    const int32_t n = ctx.nodeInForwardSlot(c);
    const QString label = QString::number(c) + " " + (n >= 0 ? token_label(replay, v.nodes[size_t(n)].token, 8) : QStringLiteral("free"));
    CAPTURE(label.toStdString());
    CHECK(svg.texts.contains(label));
  }
  CHECK(svg.texts.contains(QStringLiteral("key pos")));
}

TEST_CASE("every pane of every sample exports as vector SVG and as PNG at a chosen size", "[gui][export][samples]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  Window win;
  TraceContext& ctx = win.w.context();
  int exported = 0;
  const std::vector<std::string> samples = bundled_samples();
  REQUIRE(samples.size() >= 11);
  for (const std::string& sample : samples) {
    CAPTURE(sample);
    ctx.setTraces(trace_document_run_sample(sample));
    // A step with a forward pass after the prefill, where there is one.
    ctx.setStepIndex(static_cast<int32_t>(ctx.steps().size()) / 2);
    for (const QString& pane : MainWindow::figurePanes()) {
      CAPTURE(pane.toStdString());
      const QString svgPath = dir.filePath(pane + ".svg");
      QString err;
      REQUIRE(win.w.exportPane(pane, svgPath, {}, &err));
      const SvgContent svg = read_svg(svgPath);
      REQUIRE(svg.error.isEmpty());
      CHECK(svg.root == "svg");
      CHECK_FALSE(svg.texts.isEmpty());  // text stays text
      if (pane == "mask" && MaskFigure(ctx).vector()) CHECK(svg.images == 0);
      ++exported;
    }
    // PNG: exactly the chosen size, whatever the figure's own.
    for (const char* pane : {"trie", "mask", "kv"}) {
      const QString pngPath = dir.filePath(QStringLiteral("%1.png").arg(pane));
      QString err;
      REQUIRE(win.w.exportPane(pane, pngPath, QSize(640, 360), &err));
      const QImage img(pngPath);
      CHECK(img.size() == QSize(640, 360));
    }
  }
  CHECK(exported == static_cast<int>(samples.size()) * MainWindow::figurePanes().size());
  // Nothing but the outputs: no temporaries left behind.
  for (const QString& f : files_in(dir.path())) CHECK((f.endsWith(".svg") || f.endsWith(".png")));
}

TEST_CASE("a failed export names the file and leaves nothing behind", "[gui][export]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  Window win;
  QString err;
  CHECK_FALSE(win.w.exportPane("mask", dir.filePath("m.svg"), {}, &err));
  CHECK(err.contains("no trace loaded"));
  win.w.context().setTraces(trace_document_run_sample(TRIESCOPE_SOURCE_DIR "/samples/static_figure1.json"));
  CHECK_FALSE(win.w.exportPane("masks", dir.filePath("m.svg"), {}, &err));
  CHECK(err.contains("m.svg"));
  CHECK(err.contains("unknown pane \"masks\""));
  CHECK(err.contains("narration"));
  CHECK_FALSE(win.w.exportPane("mask", dir.filePath("m.jpeg"), {}, &err));
  CHECK(err.contains(".svg or .png"));
  CHECK_FALSE(win.w.exportPane("mask", dir.filePath("missing/m.svg"), {}, &err));
  CHECK(err.contains("missing/m.svg"));
  CHECK_FALSE(win.w.exportPane("trie", dir.filePath("huge.png"), QSize(40000, 100), &err));
  CHECK(err.contains("16384"));
  CHECK(files_in(dir.path()).isEmpty());
  // An existing file is replaced whole.
  QFile old(dir.filePath("m.svg"));
  REQUIRE(old.open(QIODevice::WriteOnly));
  old.write("old");
  old.close();
  REQUIRE(win.w.exportPane("mask", dir.filePath("m.svg"), {}, &err));
  CHECK(read_svg(dir.filePath("m.svg")).root == "svg");
  CHECK(files_in(dir.path()) == QStringList{"m.svg"});
}

TEST_CASE("the start page offers the paper-figure samples and opens one at step 0", "[gui][start]") {
  const std::vector<StartSample> found = start_samples(TRIESCOPE_SOURCE_DIR "/samples");
  REQUIRE(found.size() == 5);
  for (const StartSample& s : found) {
    CAPTURE(s.path.toStdString());
    CHECK(s.name == QString::fromStdString(json_load_file(s.path.toStdString())["name"].get<std::string>()));
    CHECK_FALSE(s.shows.isEmpty());
  }
  QTemporaryDir empty;
  CHECK(start_samples(empty.path()).empty());

  Window win;
  win.w.showStartPage();
  QApplication::processEvents();
  StartPage* page = win.w.startPage();
  REQUIRE(page);
  CHECK(page->isVisible());
  const auto buttons = page->findChildren<QPushButton*>();
  REQUIRE(buttons.size() == 5);
  CHECK(buttons[0]->text().contains(found[0].name));
  QSignalSpy spy(&win.w, &MainWindow::loadFinished);
  buttons[0]->click();
  REQUIRE(spy.wait(20000));
  REQUIRE(spy.front()[0].toBool());
  QApplication::processEvents();
  CHECK(win.w.context().stepIndex() == 0);
  CHECK_FALSE(page->isVisible());
  CHECK(win.w.trieView()->isVisible());
}
