// A one-line text whose size hint never changes with its text: a QLabel's
// setText() asks the parent layout to re-run, and on every step that
// re-laid out and repainted the whole main window (docs/benchmarks-gui.md).
#pragma once
#include <QWidget>

namespace triescope::gui {

class StatusText final : public QWidget {
  Q_OBJECT
 public:
  explicit StatusText(QWidget* parent = nullptr, int minWidth = 80);
  void setText(const QString& t);
  QString text() const { return text_; }
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* e) override;

 private:
  QString text_;
  int minWidth_;
};

}  // namespace triescope::gui
