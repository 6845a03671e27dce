// The GUI tests' main (Catch itself: tests/catch_session.cpp): widgets need a QApplication. Offscreen
// unless the caller chose a platform (ctest sets QT_QPA_PLATFORM=offscreen).
#include <QApplication>

#include "tests/catch_session.h"

namespace {
QtMessageHandler g_default = nullptr;
// The offscreen platform warns on every top-level show; keep test output readable.
void filter(QtMsgType t, const QMessageLogContext& c, const QString& m) {
  if (m.contains(QLatin1String("propagateSizeHints"))) return;
  g_default(t, c, m);
}
}  // namespace

int main(int argc, char** argv) {
  g_default = qInstallMessageHandler(filter);
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  return catch_session_run(argc, argv);
}
