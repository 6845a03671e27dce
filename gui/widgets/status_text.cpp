#include "gui/widgets/status_text.h"

#include <QPainter>

namespace triescope::gui {

StatusText::StatusText(QWidget* parent, int minWidth) : QWidget(parent), minWidth_(minWidth) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  // Paints its whole rectangle: a new text repaints this widget only, not
  // the parent underneath it.
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void StatusText::setText(const QString& t) {
  if (t == text_) return;
  text_ = t;
  setToolTip(t);
  update();
}

QSize StatusText::sizeHint() const { return {minWidth_, fontMetrics().height() + 4}; }
QSize StatusText::minimumSizeHint() const { return sizeHint(); }

void StatusText::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  p.setPen(palette().windowText().color());
  p.drawText(rect().adjusted(2, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter, fontMetrics().elidedText(text_, Qt::ElideRight, width() - 4));
}

}  // namespace triescope::gui
