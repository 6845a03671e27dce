// triescope-gui [trace.jsonl | --diff a.jsonl b.jsonl | --sample s.json]
//               [--step N] [--select NODE] [--mask-cell ROW,COL] [--screenshot out.png] [--size WxH] [--timing]
//               [--export-pane PANE [--svg out.svg] [--png out.png] [--export-size WxH]]
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QTimer>

#include <cstdio>
#include <cstring>
#include <iostream>

#include "gui/main_window.h"
#include "gui/panes/mask_view.h"

namespace {
void usage(std::ostream& os = std::cerr) {
  os << "usage: triescope-gui [trace.jsonl | --diff a.jsonl b.jsonl | --sample sample.json]\n"
               "                     [--step N] [--select NODE] [--mask-cell ROW,COL] [--screenshot out.png] [--size WxH] [--timing]\n"
               "                     [--export-pane PANE [--svg out.svg] [--png out.png] [--export-size WxH]]\n"
               "  with no trace: a start page offers the paper-figure samples\n"
               "  --mask-cell   as a click on that cell of the mask: its explanation under the mask, its path\n"
               "                and slots highlighted (for screenshots and exports)\n"
               "  --screenshot  load, go to --step, save the window as PNG and exit (headless checks)\n"
               "  --export-pane load, go to --step, write PANE's figure (trie, mask, kv, plots, verify,\n"
               "                constraint, narration, window) as SVG and/or PNG and exit; --export-size\n"
               "                scales it to fit WxH (default: the figure's own size)\n"
               "  --timing      print load and first-paint times to stderr\n";
}

struct Options {
  QString trace, diffA, diffB, sample, shot, pane, svg, png;
  int step = -1, select = -1, w = 1600, h = 1000, cellRow = -1, cellCol = -1;
  QSize exportSize;
  bool timing = false;
  bool headless() const { return !shot.isEmpty() || !pane.isEmpty(); }
};

bool parse_size(const QString& s, int* w, int* h) {
  const QStringList wh = s.split('x');
  bool ok = wh.size() == 2;
  if (ok) *w = wh[0].toInt(&ok);
  if (ok) *h = wh[1].toInt(&ok);
  return ok && *w > 0 && *h > 0;
}

// Exits 2 with the usage on a bad command line.
Options parse_options(QStringList args) {
  Options o;
  args.removeFirst();
  for (int i = 0; i < args.size(); ++i) {
    const QString a = args[i];
    auto next = [&]() -> QString {
      if (i + 1 >= args.size()) {
        std::cerr << "triescope-gui: " << a.toStdString() << " needs an argument\n";
        usage();
        std::exit(2);
      }
      return args[++i];
    };
    bool ok = true;
    int ew = 0, eh = 0;
    QStringList rc;
    if (a == "--diff") {
      o.diffA = next();
      o.diffB = next();
    } else if (a == "--sample") o.sample = next();
    else if (a == "--screenshot") o.shot = next();
    else if (a == "--export-pane") o.pane = next();
    else if (a == "--svg") o.svg = next();
    else if (a == "--png") o.png = next();
    else if (a == "--step") o.step = next().toInt(&ok);
    else if (a == "--select") o.select = next().toInt(&ok);
    else if (a == "--size") ok = parse_size(next(), &o.w, &o.h);
    else if (a == "--mask-cell") {
      rc = next().split(',');
      ok = rc.size() == 2;
      if (ok) o.cellRow = rc[0].toInt(&ok);
      if (ok) o.cellCol = rc[1].toInt(&ok);
      ok = ok && o.cellRow >= 0 && o.cellCol >= 0;
    }
    else if (a == "--export-size") {
      ok = parse_size(next(), &ew, &eh);
      o.exportSize = QSize(ew, eh);
    } else if (a == "--timing") o.timing = true;
    else if (a.startsWith("--")) {
      std::cerr << "triescope-gui: unknown option " << a.toStdString() << "\n";
      usage();
      std::exit(2);
    } else o.trace = a;
    if (!ok) {
      std::cerr << "triescope-gui: bad value for " << a.toStdString() << "\n";
      std::exit(2);
    }
  }
  const bool input = !o.trace.isEmpty() || !o.diffA.isEmpty() || !o.sample.isEmpty();
  const char* bad = o.headless() && !input ? "--screenshot and --export-pane need a trace, --diff or --sample"
                    : !o.pane.isEmpty() && o.svg.isEmpty() && o.png.isEmpty() ? "--export-pane needs --svg FILE or --png FILE"
                    : o.pane.isEmpty() && (!o.svg.isEmpty() || !o.png.isEmpty() || o.exportSize.isValid()) ? "--svg, --png and --export-size need --export-pane"
                    : nullptr;
  if (bad) {
    std::cerr << "triescope-gui: " << bad << "\n";
    std::exit(2);
  }
  return o;
}

// --screenshot: the window as PNG, through a temporary renamed into place.
bool save_screenshot(triescope::gui::MainWindow& win, const QString& shot) {
  const QImage img = win.grab().toImage();
  const QString tmp = shot + ".tmp.png";
  if (!img.save(tmp, "PNG") || !(QFile::remove(shot) || !QFile::exists(shot)) || !QFile::rename(tmp, shot)) {
    std::cerr << "triescope-gui: " << shot.toStdString() << ": cannot write the screenshot\n";
    QFile::remove(tmp);
    return false;
  }
  std::cerr << "screenshot: " << shot.toStdString() << " (step " << win.context().step() << ")\n";
  return true;
}

// --export-pane: each requested file; false after the first failure (named on stderr).
bool export_figures(triescope::gui::MainWindow& win, const Options& o) {
  for (const QString& path : {o.svg, o.png}) {
    if (path.isEmpty()) continue;
    QString err;
    if (!win.exportPane(o.pane, path, o.exportSize, &err)) {
      std::cerr << "triescope-gui: " << err.toStdString() << "\n";
      return false;
    }
    std::cerr << "exported: " << o.pane.toStdString() << " -> " << path.toStdString() << " (step " << win.context().step() << ")\n";
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  // Before QApplication, which aborts without a display: --help needs none.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      usage(std::cout);
      return 0;
    }
  QElapsedTimer clock;
  clock.start();
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("triescope-gui"));
  QApplication::setOrganizationName(QStringLiteral("TrieScope"));
  const Options o = parse_options(app.arguments());

  triescope::gui::MainWindow win;
  win.resize(o.w, o.h);
  win.setHeadless(o.headless());
  int rc = 0;
  QObject::connect(&win, &triescope::gui::MainWindow::previewShown, &win, [&] {
    if (!o.timing) return;
    (void)win.grab();
    std::cerr << "timing: preview (first records) painted " << clock.nsecsElapsed() / 1e6 << " ms after start\n";
  });
  QObject::connect(&win, &triescope::gui::MainWindow::loadFinished, &win, [&](bool ok, const QString&) {
    const double loaded_ms = clock.nsecsElapsed() / 1e6;
    if (ok && o.step >= 0) win.context().setStep(o.step);
    if (ok && o.select >= 0) win.context().selectNode(o.select);
    if (ok && o.cellRow >= 0) win.maskView()->pinCell(o.cellRow, o.cellCol);
    if (o.timing) {
      // grab() renders every visible widget now: the first full frame with the trace.
      (void)win.grab();
      std::cerr << "timing: whole trace loaded " << loaded_ms << " ms, painted " << clock.nsecsElapsed() / 1e6 << " ms after start\n";
    }
    if (!o.headless()) return;
    if (!ok) {
      rc = 1;
      app.quit();
      return;
    }
    QTimer::singleShot(300, &win, [&] {
      if (!o.pane.isEmpty() && !export_figures(win, o)) rc = 1;
      if (!o.shot.isEmpty() && !save_screenshot(win, o.shot)) rc = 1;
      app.quit();
    });
  });
  win.show();
  if (!o.diffA.isEmpty()) win.openDiff(o.diffA, o.diffB);
  else if (!o.sample.isEmpty()) win.runSample(o.sample);
  else if (!o.trace.isEmpty()) win.openTrace(o.trace);
  else win.showStartPage();
  const int r = app.exec();
  return rc ? rc : r;
}
