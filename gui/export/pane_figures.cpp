#include "gui/export/pane_figures.h"

#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QPainter>

namespace triescope::gui {

QRectF SceneFigure::source() const { return scene_->itemsBoundingRect().adjusted(-10, -10, 10, 10); }

QSizeF SceneFigure::figureSize() const { return scene_ ? source().size() : QSizeF(); }

void SceneFigure::paintFigure(QPainter& p) const {
  const QRectF src = source();
  scene_->render(&p, QRectF(QPointF(0, 0), src.size()), src);
}

QSizeF WidgetFigure::figureSize() const {
  if (!widget_) return {};
  const QSize s = widget_->size().isEmpty() ? widget_->sizeHint() : widget_->size();
  return QSizeF(s);
}

void WidgetFigure::paintFigure(QPainter& p) const {
  if (!widget_) return;
  if (widget_->size().isEmpty()) widget_->resize(widget_->sizeHint());
  widget_->render(&p, QPoint(), QRegion(), QWidget::DrawWindowBackground | QWidget::DrawChildren);
}

QSizeF NoteFigure::figureSize() const {
  const QFontMetricsF fm{QFont()};
  return QSizeF(fm.horizontalAdvance(text_) + 24, fm.height() + 24);
}

void NoteFigure::paintFigure(QPainter& p) const {
  p.setPen(Qt::darkGray);
  p.drawText(QRectF(QPointF(0, 0), figureSize()), Qt::AlignCenter, text_);
}

}  // namespace triescope::gui
