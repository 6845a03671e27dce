#include "gui/export/mask_figure.h"

#include <QFontMetricsF>
#include <QImage>
#include <QPainter>

#include <algorithm>

#include "gui/step_colors.h"

namespace triescope::gui {

struct MaskFigure::Geometry {
  int rows = 0, cols = 0;
  double cell = 16;          // cell side
  double left = 0, top = 0;  // grid origin
  bool labels = true;        // token labels on both axes (vector figures)
  QSizeF size;
};

namespace {
constexpr double kTitle = 26, kStrip = 22, kMargin = 8;
}  // namespace

bool MaskFigure::vector() const {
  const auto& f = ctx_.view().forward;
  return f && f->mask.rows <= kMaxVectorCells && f->mask.cols <= kMaxVectorCells;
}

MaskFigure::Geometry MaskFigure::geometry() const {
  Geometry g;
  const auto& f = ctx_.view().forward;
  if (!f || f->mask.rows == 0) {
    g.size = QSizeF(QFontMetricsF(QFont()).horizontalAdvance(title()) + 2 * kMargin, kTitle + 2 * kMargin);
    return g;
  }
  g.rows = f->mask.rows;
  g.cols = f->mask.cols;
  g.labels = vector();
  g.cell = g.labels ? 18 : std::max(1.0, 1024.0 / std::max(g.rows, g.cols));
  g.left = kMargin + (g.labels ? 150 : 48);
  g.top = kMargin + kTitle + (g.labels ? 78 : 20);
  const double w = g.left + g.cols * g.cell + kMargin;
  g.size = QSizeF(std::max(w, QFontMetricsF(QFont()).horizontalAdvance(title()) + 2 * kMargin), g.top + g.rows * g.cell + kStrip + kMargin);
  return g;
}

QString MaskFigure::title() const {
  const StepView& v = ctx_.view();
  if (!v.forward) return QStringLiteral("step %1 (%2): no forward pass recorded").arg(v.step).arg(QString::fromStdString(v.phase));
  return QStringLiteral("step %1 (%2): %3 queries x %4 KV slots; dark = attends")
      .arg(v.step).arg(QString::fromStdString(v.phase)).arg(v.forward->mask.rows).arg(v.forward->mask.cols);
}

QSizeF MaskFigure::figureSize() const { return geometry().size; }

void MaskFigure::paintFigure(QPainter& p) const {
  const Geometry g = geometry();
  p.setPen(Qt::black);
  p.drawText(QRectF(kMargin, kMargin, g.size.width() - 2 * kMargin, kTitle), Qt::AlignLeft | Qt::AlignVCenter, title());
  if (g.rows == 0) return;
  paintCells(p, g);
  paintRowLabels(p, g);
  paintColumnLabels(p, g);
  paintKeyPositions(p, g);
}

// One rectangle per run of attended cells in a row (vector), else one image.
void MaskFigure::paintCells(QPainter& p, const Geometry& g) const {
  const BitMask& m = ctx_.view().forward->mask;
  const QRectF grid(g.left, g.top, g.cols * g.cell, g.rows * g.cell);
  if (!g.labels) {
    QImage img(g.cols, g.rows, QImage::Format_RGB32);
    for (int r = 0; r < g.rows; ++r)
      for (int c = 0; c < g.cols; ++c) img.setPixel(c, r, (m.test(r, c) ? kMaskAllowed : kMaskForbidden).rgb());
    p.drawImage(grid, img);
    return;
  }
  p.fillRect(grid, kMaskForbidden);
  p.setPen(Qt::NoPen);
  p.setBrush(kMaskAllowed);
  for (int r = 0; r < g.rows; ++r)
    for (int c = 0; c < g.cols;) {
      if (!m.test(r, c)) {
        ++c;
        continue;
      }
      int e = c;
      while (e < g.cols && m.test(r, e)) ++e;
      p.drawRect(QRectF(g.left + c * g.cell, g.top + r * g.cell, (e - c) * g.cell, g.cell));
      c = e;
    }
  p.setPen(QPen(kMaskGrid, 0.5));
  p.setBrush(Qt::NoBrush);
  for (int r = 0; r <= g.rows; ++r) p.drawLine(QPointF(grid.left(), g.top + r * g.cell), QPointF(grid.right(), g.top + r * g.cell));
  for (int c = 0; c <= g.cols; ++c) p.drawLine(QPointF(g.left + c * g.cell, grid.top()), QPointF(g.left + c * g.cell, grid.bottom()));
}

void MaskFigure::paintRowLabels(QPainter& p, const Geometry& g) const {
  const StepView& v = ctx_.view();
  const auto& f = *v.forward;
  const TraceReplay& replay = *ctx_.shownDoc()->replay;
  p.setPen(Qt::black);
  const int every = g.labels ? 1 : std::max(1, g.rows / 16);
  for (int r = 0; r < g.rows; r += every) {
    QString t = QString::number(r);
    if (g.labels) {
      const int32_t q = static_cast<size_t>(r) < f.queries.size() ? f.queries[static_cast<size_t>(r)] : -1;
      const QString tok = node_token_label(v, replay, q, 10, QStringLiteral("?"));
      const QString pos = static_cast<size_t>(r) < f.positions.size() ? QString::number(f.positions[static_cast<size_t>(r)]) : QStringLiteral("?");
      t = q >= 0 ? QStringLiteral("#%1 %2  p%3").arg(q).arg(tok, pos) : QStringLiteral("row %1  p%2").arg(r).arg(pos);
    }
    p.drawText(QRectF(kMargin, g.top + r * g.cell, g.left - kMargin - 6, g.cell), Qt::AlignRight | Qt::AlignVCenter, t);
  }
}

void MaskFigure::paintColumnLabels(QPainter& p, const Geometry& g) const {
  const StepView& v = ctx_.view();
  const TraceReplay& replay = *ctx_.shownDoc()->replay;
  p.setPen(Qt::black);
  const int every = g.labels ? 1 : std::max(1, g.cols / 16);
  for (int c = 0; c < g.cols; c += every) {
    QString t = QString::number(c);
    if (g.labels) {
      const int32_t n = ctx_.nodeInForwardSlot(c);
      t += QStringLiteral(" ") + node_token_label(v, replay, n, 8, QStringLiteral("free"));
    }
    p.save();
    p.translate(g.left + (c + 0.5) * g.cell, g.top - 4);
    if (g.labels) p.rotate(-60);
    p.drawText(QRectF(0, -g.cell / 2, g.labels ? 80 : 40, g.cell), Qt::AlignLeft | Qt::AlignVCenter, t);
    p.restore();
  }
}

// Under each column: the position id of the node in that slot (its depth).
void MaskFigure::paintKeyPositions(QPainter& p, const Geometry& g) const {
  const StepView& v = ctx_.view();
  const double y = g.top + g.rows * g.cell + 2;
  p.setPen(Qt::darkGray);
  p.drawText(QRectF(kMargin, y, g.left - kMargin - 6, kStrip - 4), Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("key pos"));
  if (!g.labels) return;
  for (int c = 0; c < g.cols; ++c) {
    const int32_t n = ctx_.nodeInForwardSlot(c);
    if (n < 0 || static_cast<size_t>(n) >= v.nodes.size()) continue;
    p.drawText(QRectF(g.left + c * g.cell, y, g.cell, kStrip - 4), Qt::AlignCenter, QString::number(v.nodes[static_cast<size_t>(n)].depth));
  }
}

}  // namespace triescope::gui
