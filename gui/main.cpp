// triescope-gui [trace.jsonl | --diff a.jsonl b.jsonl | --sample s.json]
//               [--step N] [--select NODE] [--screenshot out.png] [--size WxH] [--timing]
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QTimer>

#include <cstdio>
#include <cstring>
#include <iostream>

#include "gui/main_window.h"

namespace {
void usage(std::ostream& os = std::cerr) {
  os << "usage: triescope-gui [trace.jsonl | --diff a.jsonl b.jsonl | --sample sample.json]\n"
               "                     [--step N] [--select NODE] [--screenshot out.png] [--size WxH] [--timing]\n"
               "  --screenshot  load, go to --step, save the window as PNG and exit (headless checks)\n"
               "  --timing      print load and first-paint times to stderr\n";
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
  QStringList args = app.arguments();
  args.removeFirst();
  QString trace, diffA, diffB, sample, shot;
  int step = -1, select = -1, w = 1600, h = 1000;
  bool timing = false;
  for (int i = 0; i < args.size(); ++i) {
    const QString a = args[i];
    auto need = [&](int n) {
      if (i + n >= args.size()) {
        std::cerr << "triescope-gui: " << a.toStdString() << " needs " << n << " argument(s)\n";
        usage();
        std::exit(2);
      }
    };
    bool ok = true;
    if (a == "--diff") {
      need(2);
      diffA = args[++i];
      diffB = args[++i];
    } else if (a == "--sample") {
      need(1);
      sample = args[++i];
    } else if (a == "--screenshot") {
      need(1);
      shot = args[++i];
    } else if (a == "--step") {
      need(1);
      step = args[++i].toInt(&ok);
    } else if (a == "--select") {
      need(1);
      select = args[++i].toInt(&ok);
    } else if (a == "--size") {
      need(1);
      const QStringList wh = args[++i].split('x');
      ok = wh.size() == 2;
      if (ok) {
        w = wh[0].toInt(&ok);
        if (ok) h = wh[1].toInt(&ok);
      }
    } else if (a == "--timing") {
      timing = true;
    } else if (a.startsWith("--")) {
      std::cerr << "triescope-gui: unknown option " << a.toStdString() << "\n";
      usage();
      return 2;
    } else {
      trace = a;
    }
    if (!ok) {
      std::cerr << "triescope-gui: bad value for " << a.toStdString() << "\n";
      return 2;
    }
  }

  triescope::gui::MainWindow win;
  win.resize(w, h);
  win.setHeadless(!shot.isEmpty());
  int rc = 0;
  QObject::connect(&win, &triescope::gui::MainWindow::previewShown, &win, [&] {
    if (!timing) return;
    (void)win.grab();
    std::cerr << "timing: preview (first records) painted " << clock.nsecsElapsed() / 1e6 << " ms after start\n";
  });
  QObject::connect(&win, &triescope::gui::MainWindow::loadFinished, &win, [&](bool ok, const QString&) {
    const double loaded_ms = clock.nsecsElapsed() / 1e6;
    if (ok && step >= 0) win.context().setStep(step);
    if (ok && select >= 0) win.context().selectNode(select);
    if (timing) {
      // grab() renders every visible widget now: the first full frame with the trace.
      (void)win.grab();
      std::cerr << "timing: whole trace loaded " << loaded_ms << " ms, painted " << clock.nsecsElapsed() / 1e6 << " ms after start\n";
    }
    if (shot.isEmpty()) return;
    if (!ok) {
      rc = 1;
      app.quit();
      return;
    }
    QTimer::singleShot(300, &win, [&] {
      const QImage img = win.grab().toImage();
      const QString tmp = shot + ".tmp.png";
      if (!img.save(tmp, "PNG") || !(QFile::remove(shot) || !QFile::exists(shot)) || !QFile::rename(tmp, shot)) {
        std::cerr << "triescope-gui: " << shot.toStdString() << ": cannot write the screenshot\n";
        QFile::remove(tmp);
        rc = 1;
      } else {
        std::cerr << "screenshot: " << shot.toStdString() << " (step " << win.context().step() << ")\n";
      }
      app.quit();
    });
  });
  win.show();
  if (!diffA.isEmpty()) win.openDiff(diffA, diffB);
  else if (!sample.isEmpty()) win.runSample(sample);
  else if (!trace.isEmpty()) win.openTrace(trace);
  else if (!shot.isEmpty()) {
    std::cerr << "triescope-gui: --screenshot needs a trace, --diff or --sample\n";
    return 2;
  }
  const int r = app.exec();
  return rc ? rc : r;
}
