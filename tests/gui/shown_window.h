// The main window as the GUI tests use it: 1600 x 1000, shown offscreen,
// errors to stderr instead of dialogs.
#pragma once
#include <QApplication>

#include "gui/main_window.h"

namespace triescope::gui_tests {

struct ShownWindow {
  gui::MainWindow w;
  ShownWindow() {
    w.setHeadless(true);
    w.resize(1600, 1000);
    w.show();
    QApplication::processEvents();
  }
};

}  // namespace triescope::gui_tests
