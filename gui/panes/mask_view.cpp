#include "gui/panes/mask_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "gui/step_colors.h"

namespace triescope::gui {

namespace {
constexpr double kLabelCell = 13;  // from this zoom on, axes show token labels
QRgb blend(QRgb a, QColor b, double t) {
  return qRgb(int(qRed(a) * (1 - t) + b.red() * t), int(qGreen(a) * (1 - t) + b.green() * t), int(qBlue(a) * (1 - t) + b.blue() * t));
}
}  // namespace

MaskView::MaskView(TraceContext& ctx, QWidget* parent) : QAbstractScrollArea(parent), ctx_(ctx) {
  viewport()->setMouseTracking(true);
  setMouseTracking(true);
  setMinimumSize(200, 160);
  ctx_.addViewer(this);
}

MaskView::~MaskView() { ctx_.removeViewer(this); }

int MaskView::rows() const {
  const auto& v = ctx_.view();
  return v.forward ? v.forward->mask.rows : 0;
}
int MaskView::cols() const {
  const auto& v = ctx_.view();
  return v.forward ? v.forward->mask.cols : 0;
}
int MaskView::leftMargin() const { return cell_ >= kLabelCell ? 150 : 48; }
int MaskView::topMargin() const { return cell_ >= kLabelCell ? 72 : 20; }

QRect MaskView::gridRect() const {
  const QRect vp = viewport()->rect();
  return QRect(leftMargin(), topMargin(), std::max(0, vp.width() - leftMargin()), std::max(0, vp.height() - topMargin() - kBottom));
}

void MaskView::onTraceLoaded(TraceContext&) { fitPending_ = true; }


void MaskView::onStepChanged(TraceContext&) {
  hoverRow_ = hoverCol_ = -1;
  // Until the user zooms, every step is shown whole (the mask grows).
  if (fitPending_ && rows() > 0) fit();
  updateScrollBars();
  viewport()->update();
}

void MaskView::onSelectionChanged(TraceContext& ctx) {
  // Bring the selected row/column into view.
  const int r = ctx.rowOfNode(ctx.selectedNode()), c = ctx.slotOfNode(ctx.selectedNode());
  const QRect g = gridRect();
  if (c >= 0) {
    const int x = int(c * cell_);
    auto* h = horizontalScrollBar();
    if (x < h->value() || x + cell_ > h->value() + g.width()) h->setValue(int(x - g.width() / 2));
  }
  if (r >= 0) {
    const int y = int(r * cell_);
    auto* vb = verticalScrollBar();
    if (y < vb->value() || y + cell_ > vb->value() + g.height()) vb->setValue(int(y - g.height() / 2));
  }
  viewport()->update();
}

void MaskView::setCellSize(double px) {
  const double c = std::clamp(px, 0.05, 64.0);
  if (c == cell_) return;
  cell_ = c;
  fitPending_ = false;
  updateScrollBars();
  viewport()->update();
}

void MaskView::fit() {
  const int r = rows(), c = cols();
  fitPending_ = true;  // follow the mask's growth until the user zooms
  if (r == 0 || c == 0) return;
  const QRect vp = viewport()->rect();
  // Fit with the label margins first; fall back to the small margins.
  double s = std::min((vp.width() - 150.0) / c, (vp.height() - 72.0 - kBottom) / r);
  if (s < kLabelCell) s = std::min((vp.width() - 48.0) / c, (vp.height() - 20.0 - kBottom) / r);
  cell_ = std::clamp(s, 0.05, 36.0);
  updateScrollBars();
  horizontalScrollBar()->setValue(0);
  verticalScrollBar()->setValue(0);
  viewport()->update();
}

void MaskView::updateScrollBars() {
  const QRect g = gridRect();
  const int cw = int(std::ceil(cols() * cell_)), ch = int(std::ceil(rows() * cell_));
  horizontalScrollBar()->setRange(0, std::max(0, cw - g.width()));
  horizontalScrollBar()->setPageStep(std::max(1, g.width()));
  horizontalScrollBar()->setSingleStep(std::max(1, int(cell_)));
  verticalScrollBar()->setRange(0, std::max(0, ch - g.height()));
  verticalScrollBar()->setPageStep(std::max(1, g.height()));
  verticalScrollBar()->setSingleStep(std::max(1, int(cell_)));
}

void MaskView::resizeEvent(QResizeEvent* e) {
  QAbstractScrollArea::resizeEvent(e);
  if (fitPending_ && rows() > 0) fit();
  updateScrollBars();
}

QPoint MaskView::cellCenter(int row, int col) const {
  const QRect g = gridRect();
  return QPoint(int(g.left() + (col + 0.5) * cell_ - horizontalScrollBar()->value()),
                int(g.top() + (row + 0.5) * cell_ - verticalScrollBar()->value()));
}

QPair<int, int> MaskView::cellAt(QPoint p) const {
  const QRect g = gridRect();
  if (!g.contains(p)) return {-1, -1};
  const int c = int(std::floor((p.x() - g.left() + horizontalScrollBar()->value()) / cell_));
  const int r = int(std::floor((p.y() - g.top() + verticalScrollBar()->value()) / cell_));
  if (r < 0 || c < 0 || r >= rows() || c >= cols()) return {-1, -1};
  return {r, c};
}

QString MaskView::cellExplanation(int row, int col) const {
  const StepView& v = ctx_.view();
  if (!v.forward || row < 0 || col < 0 || row >= rows() || col >= cols()) return {};
  const auto& f = *v.forward;
  const TraceDocument* doc = ctx_.shownDoc();
  const bool allowed = f.mask.test(row, col);
  const int32_t q = row < static_cast<int>(f.queries.size()) ? f.queries[static_cast<size_t>(row)] : -1;
  const int32_t k = ctx_.nodeInSlot(col);
  auto describe = [&](int32_t id) {
    if (id < 0 || static_cast<size_t>(id) >= v.nodes.size()) return QStringLiteral("?");
    const TreeNode& n = v.nodes[static_cast<size_t>(id)];
    return QStringLiteral("node %1 \"%2\" (position %3)").arg(id).arg(token_label(*doc->replay, n.token, 24)).arg(n.depth);
  };
  QString s = QStringLiteral("query row %1: %2, position id %3, writes slot %4\n")
                  .arg(row)
                  .arg(describe(q))
                  .arg(f.positions[static_cast<size_t>(row)])
                  .arg(f.slots[static_cast<size_t>(row)]);
  s += QStringLiteral("key slot %1: %2\n").arg(col).arg(k < 0 ? QStringLiteral("free (no node)") : describe(k));
  s += allowed ? QStringLiteral("ALLOWED (bit set)\n") : QStringLiteral("not allowed (bit clear)\n");
  // Why: the rule every algorithm shares (ARCHITECTURE.md): a query attends
  // to exactly its ancestors and itself in the token tree.
  QString why;
  bool expected = false;
  if (q < 0 || k < 0) {
    why = k < 0 ? QStringLiteral("the slot holds no node") : QStringLiteral("the row names no tree node");
  } else if (q == k) {
    why = QStringLiteral("the key is the query itself");
    expected = true;
  } else {
    int32_t a = v.nodes[static_cast<size_t>(q)].parent;
    while (a >= 0 && a != k) a = v.nodes[static_cast<size_t>(a)].parent;
    expected = a == k;
    why = expected ? QStringLiteral("the key is an ancestor of the query") : QStringLiteral("the key is not an ancestor of the query");
  }
  s += QStringLiteral("why: ") + why;
  if (expected != allowed) s += QStringLiteral("\n\u26a0 the recorded bit disagrees with the tree's ancestry");
  if (ctx_.diffMode() && ctx_.marks().mask_cells.count({row, col})) s += QStringLiteral("\n\u2260 differs between trace A and trace B");
  return s;
}

void MaskView::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  paintTo(p, viewport()->rect(), horizontalScrollBar()->value(), verticalScrollBar()->value());
}

void MaskView::paintTo(QPainter& p, QRect area, int sx, int sy) const {
  p.fillRect(area, palette().window());
  const StepView& v = ctx_.view();
  if (!v.forward || rows() == 0) {
    p.drawText(area, Qt::AlignCenter, ctx_.loaded() ? tr("no forward pass recorded at this step") : tr("no trace loaded"));
    return;
  }
  const auto& f = *v.forward;
  const TraceDocument* doc = ctx_.shownDoc();
  const int L = leftMargin(), T = topMargin();
  const QRect g(area.left() + L, area.top() + T, std::max(0, area.width() - L), std::max(0, area.height() - T - kBottom));
  const int R = rows(), C = cols();
  const int selRow = ctx_.rowOfNode(ctx_.selectedNode()), selCol = ctx_.slotOfNode(ctx_.selectedNode());
  const double c = cell_;

  // The bitmap is sampled per screen pixel, so its cost is the viewport's
  // size whatever the mask's (a 4096 x 4096 mask steps as fast as 8 x 8).
  QImage img(std::max(1, g.width()), std::max(1, g.height()), QImage::Format_RGB32);
  std::vector<int32_t> colOf(static_cast<size_t>(img.width()));
  std::vector<char> colEdge(static_cast<size_t>(img.width()));
  const bool grid = c >= 5;
  for (int x = 0; x < img.width(); ++x) {
    colOf[static_cast<size_t>(x)] = int((x + sx) / c);
    colEdge[static_cast<size_t>(x)] = grid && (x == 0 || int((x + sx) / c) != int((x + sx - 1) / c));
  }
  const QRgb bg = palette().window().color().rgb();
  const QRgb on = kMaskAllowed.rgb(), off = kMaskForbidden.rgb(), gridc = kMaskGrid.rgb();
  for (int y = 0; y < img.height(); ++y) {
    QRgb* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    const int r = int((y + sy) / c);
    if (r >= R) {
      std::fill(line, line + img.width(), bg);
      continue;
    }
    const bool rowEdge = grid && (y == 0 || int((y + sy - 1) / c) != r);
    const uint64_t* bits = f.mask.row(r);
    const bool rowSel = r == selRow, rowHover = r == hoverRow_;
    for (int x = 0; x < img.width(); ++x) {
      const int col = colOf[static_cast<size_t>(x)];
      if (col >= C) {
        line[x] = bg;
        continue;
      }
      QRgb px = ((bits[col >> 6] >> (col & 63)) & 1u) ? on : off;
      // Selection tints masked cells strongly and attending cells lightly,
      // so the row still reads as a row of ancestors.
      if (rowSel || col == selCol) px = blend(px, kSelection, px == on ? 0.25 : 0.55);
      else if (rowHover || col == hoverCol_) px = blend(px, kSelection, px == on ? 0.1 : 0.25);
      if (rowEdge || colEdge[static_cast<size_t>(x)]) px = blend(px, QColor::fromRgb(gridc), 0.6);
      line[x] = px;
    }
  }
  p.drawImage(g.topLeft(), img);
  {
    // Frame the selected row and column.
    p.save();
    p.setClipRect(g);
    p.setPen(QPen(kSelection.darker(115), 2));
    p.setBrush(Qt::NoBrush);
    if (selRow >= 0) p.drawRect(QRectF(g.left() - sx - 1, g.top() + selRow * c - sy, C * c + 2, c));
    if (selCol >= 0 && selCol < C) p.drawRect(QRectF(g.left() + selCol * c - sx, g.top() - sy - 1, c, R * c + 2));
    p.restore();
  }

  // Diff marks: outline (zoomed in) or a solid cell (zoomed out).
  if (ctx_.diffMode()) {
    p.save();
    p.setClipRect(g);
    for (auto [r, col] : ctx_.marks().mask_cells) {
      const double y = g.top() + r * c - sy;
      if (col < 0) {
        p.fillRect(QRectF(g.left(), y, g.width(), std::max(c, 2.0)), QColor(220, 0, 140, 90));
        continue;
      }
      const QRectF cell(g.left() + col * c - sx, y, std::max(c, 3.0), std::max(c, 3.0));
      if (c >= 6) {
        p.setPen(QPen(kDiffMark, 2.5));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cell.adjusted(1, 1, -1, -1));
        p.drawLine(cell.topLeft() + QPointF(2, 2), cell.bottomRight() - QPointF(2, 2));
      } else {
        p.fillRect(cell, kDiffMark);
      }
    }
    p.restore();
  }

  // Axes. Rows: query node token and its recorded position id; columns: the
  // token in each slot; the strip below: the position id of each slot's node.
  QFont fnt = font();
  fnt.setPointSizeF(8);
  p.setFont(fnt);
  const int r0 = std::max(0, int(sy / c)), r1 = std::min(R - 1, int((sy + g.height()) / c));
  const int c0 = std::max(0, int(sx / c)), c1 = std::min(C - 1, int((sx + g.width()) / c));
  const bool labels = c >= kLabelCell;
  const int every = labels ? 1 : std::max(1, int(std::ceil(14 / c)));
  p.save();
  p.setClipRect(QRect(area.left(), g.top(), L, g.height()));
  for (int r = r0; r <= r1; ++r) {
    if (r % every && r != selRow) continue;
    const double y = g.top() + r * c - sy;
    QString t;
    if (labels) {
      const int32_t q = f.queries.size() > static_cast<size_t>(r) ? f.queries[static_cast<size_t>(r)] : -1;
      const QString tok = q >= 0 && static_cast<size_t>(q) < v.nodes.size() ? token_label(*doc->replay, v.nodes[static_cast<size_t>(q)].token, 10) : QStringLiteral("?");
      t = QStringLiteral("#%1 %2  p%3").arg(q).arg(tok).arg(f.positions[static_cast<size_t>(r)]);
    } else {
      t = QString::number(r);
    }
    const bool diffPos = ctx_.diffMode() && ctx_.marks().positions.count(r);
    p.setPen(r == selRow ? QColor(170, 90, 0) : diffPos ? kDiffMark : palette().windowText().color());
    p.drawText(QRectF(area.left() + 2, y, L - 6, std::max(c, 12.0)), Qt::AlignRight | Qt::AlignVCenter, t);
  }
  p.restore();
  p.save();
  p.setClipRect(QRect(g.left(), area.top(), g.width(), T));
  for (int col = c0; col <= c1; ++col) {
    if (col % every && col != selCol) continue;
    const double x = g.left() + col * c - sx;
    const int32_t k = ctx_.nodeInSlot(col);
    QString t = labels ? (k >= 0 ? token_label(*doc->replay, v.nodes[static_cast<size_t>(k)].token, 10) : QStringLiteral("free")) : QString::number(col);
    if (labels) t = QStringLiteral("%1 %2").arg(col).arg(t);
    p.setPen(col == selCol ? QColor(170, 90, 0) : palette().windowText().color());
    if (labels) {
      p.save();
      p.translate(x + c / 2 + 4, g.top() - 4);
      p.rotate(-60);
      p.drawText(QPointF(0, 0), t);
      p.restore();
    } else {
      p.drawText(QRectF(x - 10, area.top(), 40, T), Qt::AlignLeft | Qt::AlignBottom, t);
    }
  }
  p.restore();
  // Position-id strip: one cell per slot, the key's position id (its depth).
  const QRect strip(g.left(), g.bottom() + 4, g.width(), kBottom - 8);
  p.drawText(QRect(area.left(), strip.top(), L - 6, strip.height()), Qt::AlignRight | Qt::AlignVCenter, tr("key pos"));
  p.save();
  p.setClipRect(strip);
  const bool stripText = c >= 16;
  int maxDepth = 1;
  for (const auto& nd : v.nodes) maxDepth = std::max(maxDepth, nd.depth);
  for (int col = c0; col <= c1; ++col) {
    const int32_t k = ctx_.nodeInSlot(col);
    const QRectF cell(g.left() + col * c - sx, strip.top(), std::max(c, 1.0), strip.height());
    if (k < 0) {
      p.fillRect(cell, Qt::white);
      continue;
    }
    const int depth = v.nodes[static_cast<size_t>(k)].depth;
    // Shade by depth so the staircase of positions reads even zoomed out.
    const int shade = 245 - std::min(90, depth * 90 / std::max(1, maxDepth));
    p.fillRect(cell, col == selCol ? kSelection : QColor(shade, shade, 255));
    if (c >= 4) {
      p.setPen(QColor(255, 255, 255));
      p.drawLine(cell.topRight(), cell.bottomRight());
    }
    if (stripText) {
      p.setPen(Qt::black);
      p.drawText(cell, Qt::AlignCenter, QString::number(depth));
    }
  }
  p.restore();
  // Legend.
  p.setPen(palette().windowText().color());
  const int ly = area.top() + 2;
  p.fillRect(QRect(area.left() + 4, ly + 2, 10, 10), kMaskAllowed);
  p.drawText(QPoint(area.left() + 18, ly + 11), tr("attends"));
  p.fillRect(QRect(area.left() + 4, ly + 16, 10, 10), kMaskForbidden);
  p.drawRect(QRect(area.left() + 4, ly + 16, 10, 10));
  p.drawText(QPoint(area.left() + 18, ly + 25), tr("masked"));
  if (labels) {
    p.drawText(QPoint(area.left() + 4, ly + 40), tr("rows: query #node tok pos"));
    p.drawText(QPoint(area.left() + 4, ly + 54), tr("cols: KV slot, token"));
  }
  if (ctx_.diffMode()) {
    p.fillRect(QRect(area.left() + 70, ly + 2, 10, 10), kDiffMark);
    p.drawText(QPoint(area.left() + 84, ly + 11), tr("A \u2260 B"));
  }
  p.drawText(QRect(area.left(), area.bottom() - kBottom, L, kBottom), Qt::AlignCenter, tr("%1\u00d7%2").arg(R).arg(C));
}

QImage MaskView::renderFull(double cellPx) const {
  MaskView* self = const_cast<MaskView*>(this);
  const double old = cell_;
  self->cell_ = cellPx;
  const QSize sz(leftMargin() + int(std::ceil(cols() * cellPx)) + 2, topMargin() + int(std::ceil(rows() * cellPx)) + kBottom + 2);
  QImage img(sz, QImage::Format_ARGB32_Premultiplied);
  QPainter p(&img);
  paintTo(p, QRect(QPoint(0, 0), sz), 0, 0);
  p.end();
  self->cell_ = old;
  return img;
}

void MaskView::mouseMoveEvent(QMouseEvent* e) {
  const auto [r, c] = cellAt(e->position().toPoint());
  if (r != hoverRow_ || c != hoverCol_) {
    hoverRow_ = r;
    hoverCol_ = c;
    viewport()->update();
  }
}

void MaskView::leaveEvent(QEvent* e) {
  hoverRow_ = hoverCol_ = -1;
  viewport()->update();
  QAbstractScrollArea::leaveEvent(e);
}

void MaskView::mousePressEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  const QRect g = gridRect();
  const auto [r, c] = cellAt(pos);
  if (r >= 0) {
    ctx_.selectNode(ctx_.nodeOfRow(r));  // a cell selects its query node
    return;
  }
  // The column axis and the position strip select the slot's node.
  if (pos.x() >= g.left() && (pos.y() < g.top() || pos.y() > g.bottom())) {
    const int col = int(std::floor((pos.x() - g.left() + horizontalScrollBar()->value()) / cell_));
    if (col >= 0 && col < cols()) ctx_.selectNode(ctx_.nodeInSlot(col));
  } else if (pos.x() < g.left() && pos.y() >= g.top() && pos.y() <= g.bottom()) {
    const int row = int(std::floor((pos.y() - g.top() + verticalScrollBar()->value()) / cell_));
    if (row >= 0 && row < rows()) ctx_.selectNode(ctx_.nodeOfRow(row));
  }
}

void MaskView::wheelEvent(QWheelEvent* e) {
  if (e->modifiers() & Qt::ControlModifier) {
    // Zoom about the cursor.
    const QPointF pos = e->position();
    const QRect g = gridRect();
    const double fx = (pos.x() - g.left() + horizontalScrollBar()->value()) / cell_;
    const double fy = (pos.y() - g.top() + verticalScrollBar()->value()) / cell_;
    setCellSize(cell_ * std::pow(1.0015, e->angleDelta().y()));
    horizontalScrollBar()->setValue(int(fx * cell_ - (pos.x() - gridRect().left())));
    verticalScrollBar()->setValue(int(fy * cell_ - (pos.y() - gridRect().top())));
    e->accept();
    return;
  }
  QAbstractScrollArea::wheelEvent(e);
}

bool MaskView::viewportEvent(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const auto [r, c] = cellAt(he->pos());
    if (r >= 0) QToolTip::showText(he->globalPos(), cellExplanation(r, c), viewport());
    else QToolTip::hideText();
    return true;
  }
  return QAbstractScrollArea::viewportEvent(e);
}

}  // namespace triescope::gui
