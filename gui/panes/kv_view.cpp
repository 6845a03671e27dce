#include "gui/panes/kv_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <cmath>

#include "gui/step_colors.h"

namespace triescope::gui {

KvView::KvView(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  // paintEvent fills its whole rect: no parent repaint underneath it.
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumHeight(120);
  watchContext();
}
void KvView::onStepChanged(TraceContext&) {
  branch_ = node_branches(ctx_.view());
  relayout();
  update();
}
void KvView::onSelectionChanged(TraceContext&) { update(); }
void KvView::onHighlightChanged(TraceContext&) { update(); }

std::vector<std::pair<int, QRect>> KvView::highlightedSlots() const {
  std::vector<std::pair<int, QRect>> out;
  const MaskCellHighlight& h = ctx_.highlight();
  if (h.empty() || !ctx_.loaded()) return out;
  const bool old = ctx_.forwardBeforeGc() && oldSlots_ > 0;
  for (int s : {h.keySlot, h.querySlot}) {
    if (s < 0 || s >= (old ? oldSlots_ : slots_)) continue;
    if (!out.empty() && out.front().first == s) continue;
    out.emplace_back(s, old ? oldSlotRect(s) : slotRect(s));
  }
  return out;
}

// The pointed mask cell: its key slot framed solid gold, its query's dashed.
void KvView::paintHighlight(QPainter& p) const {
  const MaskCellHighlight& h = ctx_.highlight();
  p.setBrush(Qt::NoBrush);
  for (const auto& [s, r] : highlightedSlots()) {
    p.setPen(QPen(kCellHighlight, 3, s == h.keySlot ? Qt::SolidLine : Qt::DashLine));
    p.drawRect(r.adjusted(-2, -2, 2, 2));
  }
}

QSize KvView::sizeHint() const { return {700, 260}; }

void KvView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  relayout();
}

void KvView::relayout() {
  const StepView& v = ctx_.view();
  slots_ = static_cast<int>(v.slot_to_node.size());
  oldSlots_ = v.gc_moves.empty() ? 0 : std::max(v.gc_slots_before, 0);
  const int w = std::max(100, width() - 16);
  // Pick the largest cell (<= 34 px) that fits all grids in the height.
  const int total = slots_ + oldSlots_;
  const int avail = std::max(40, height() - kHeader - (oldSlots_ ? 40 : 8));
  cell_ = 34;
  while (cell_ > 3) {
    const int per = std::max(1, w / cell_);
    const int rows = (slots_ + per - 1) / per + (oldSlots_ ? (oldSlots_ + per - 1) / per : 0);
    if (rows * cell_ <= avail) break;
    --cell_;
  }
  (void)total;
  perRow_ = std::max(1, w / cell_);
  if (oldSlots_) {
    oldTop_ = kHeader + 16;
    gridTop_ = oldTop_ + ((oldSlots_ + perRow_ - 1) / perRow_) * cell_ + 34;
  } else {
    oldTop_ = -1;
    gridTop_ = kHeader;
  }
}

QRect KvView::slotRect(int slot) const {
  return QRect(8 + (slot % perRow_) * cell_, gridTop_ + (slot / perRow_) * cell_, cell_ - 2, cell_ - 2);
}
QRect KvView::oldSlotRect(int slot) const {
  return QRect(8 + (slot % perRow_) * cell_, oldTop_ + (slot / perRow_) * cell_, cell_ - 2, cell_ - 2);
}

int KvView::slotAt(QPoint p) const {
  for (int s = 0; s < slots_; ++s)
    if (slotRect(s).contains(p)) return s;
  return -1;
}

QString KvView::headerText() const {
  const StepView& v = ctx_.view();
  const std::optional<KvRecord>& kv = v.kv;
  const QString na = QStringLiteral("n/a");
  auto num = [&](std::optional<int64_t> x) { return x ? QString::number(*x) : na; };
  QString s = tr("trie: %1 slots in use (peak %2)   |   batch baseline: %3 slots   |   live beams %4")
                  .arg(kv ? QString::number(kv->slots) : na, kv ? QString::number(kv->peak) : na, num(kv ? kv->batch_slots : std::nullopt),
                       num(kv ? kv->live_beams : std::nullopt));
  if (kv && kv->bytes && kv->batch_bytes)
    s += tr("   |   %1 MiB vs %2 MiB").arg(static_cast<double>(*kv->bytes) / 1048576.0, 0, 'f', 1).arg(static_cast<double>(*kv->batch_bytes) / 1048576.0, 0, 'f', 1);
  return s;
}

// Draws one KV slot cell: its node's branch colour (pruned and rejected
// hatched or darker), its index and token when the cell is big enough, the
// selection and diff marks on the current grid.
struct KvView::SlotPainter {
  QPainter& p;
  const StepView& v;
  const TraceDocument& doc;
  const std::vector<int32_t>& branch;  // [nodes]
  const QFont& f;
  int cell;
  int32_t sel;
  const std::set<int32_t>* diffSlots;

  QColor nodeColor(int32_t node) const { return branch_color(static_cast<size_t>(node) < branch.size() ? branch[static_cast<size_t>(node)] : -1); }

  void draw(QRect r, int32_t node, int slotIndex, bool current) const {
    if (cell < 10) drawPlain(r, node);
    else if (node < 0) drawFree(r);
    else drawNode(r, node, slotIndex);
    if (current && node >= 0 && node == sel) {
      p.setPen(QPen(kSelection.darker(110), 3));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.adjusted(-1, -1, 1, 1));
    }
    if (current && diffSlots && diffSlots->count(slotIndex)) {
      p.setPen(QPen(kDiffMark, 2.5, Qt::DotLine));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.adjusted(-2, -2, 2, 2));
    }
  }
  // Small cells: plain fills (thousands of slots stay cheap to draw).
  void drawPlain(QRect r, int32_t node) const {
    QColor c = kFreeSlot.darker(104);
    if (node >= 0) {
      const TreeNode& n = v.nodes[static_cast<size_t>(node)];
      c = nodeColor(node);
      if (n.status == NodeStatus::pruned || n.status == NodeStatus::rejected) c = c.darker(150);
    }
    p.fillRect(r, c);
  }
  void drawFree(QRect r) const {
    p.setPen(QPen(Qt::gray, 1, Qt::DashLine));
    p.setBrush(kFreeSlot);
    p.drawRect(r);
  }
  void drawNode(QRect r, int32_t node, int slotIndex) const {
    const TreeNode& n = v.nodes[static_cast<size_t>(node)];
    QColor c = nodeColor(node);
    p.setPen(QPen(c.darker(140), 1));
    p.setBrush(c);
    p.drawRect(r);
    if (n.status == NodeStatus::pruned || n.status == NodeStatus::rejected) {
      p.setBrush(QBrush(QColor(90, 90, 90), Qt::BDiagPattern));
      p.drawRect(r);
    }
    if (cell >= 22) {
      p.setPen(Qt::black);
      QFont sf = f;
      sf.setPointSizeF(cell >= 30 ? 7.5 : 6.5);
      p.setFont(sf);
      p.drawText(r.adjusted(1, 0, -1, -r.height() / 2), Qt::AlignCenter, QString::number(slotIndex));
      p.drawText(r.adjusted(1, r.height() / 2 - 2, -1, 0), Qt::AlignCenter, token_label(*doc.replay, n.token, 4));
      p.setFont(f);
    }
  }
};

void KvView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (!ctx_.loaded()) return;
  // A paint that comes before this pane heard of the new step (another pane
  // flushed posted events first) must not index with the old geometry.
  if (slots_ != static_cast<int>(ctx_.view().slot_to_node.size()) || branch_.size() != ctx_.view().nodes.size()) {
    branch_ = node_branches(ctx_.view());
    relayout();
  }
  const StepView& v = ctx_.view();
  QFont f = font();
  f.setPointSizeF(9);
  p.setFont(f);
  paintLegend(p);
  const SlotPainter slot{p, v, *ctx_.shownDoc(), branch_, f, cell_, ctx_.selectedNode(), ctx_.diffMode() ? &ctx_.marks().kv_slots : nullptr};
  if (oldSlots_) {
    paintBeforeGc(p, slot);
  } else {
    p.drawText(8, gridTop_ - 3, QString());
  }
  for (int s = 0; s < slots_; ++s) slot.draw(slotRect(s), v.slot_to_node[static_cast<size_t>(s)], s, true);
  if (oldSlots_) paintGcMoves(p);
  paintHighlight(p);
}

void KvView::paintLegend(QPainter& p) const {
  p.setPen(palette().windowText().color());
  p.drawText(QRect(8, 2, width() - 16, 18), Qt::AlignLeft | Qt::AlignVCenter, headerText());
  int lx = 8;
  auto legend = [&](const QColor& c, const QString& t, bool dashed = false) {
    p.setPen(QPen(Qt::darkGray, 1, dashed ? Qt::DashLine : Qt::SolidLine));
    p.setBrush(c);
    p.drawRect(lx, 24, 12, 12);
    p.setPen(palette().windowText().color());
    p.drawText(lx + 16, 35, t);
    lx += 22 + p.fontMetrics().horizontalAdvance(t);
  };
  legend(kSharedBranch, tr("shared prefix"));
  legend(branch_color(3), tr("one colour per branch"));
  legend(kFreeSlot, tr("free"), true);
  legend(QColor(200, 200, 200), tr("pruned (hatched)"));
  if (ctx_.diffMode()) legend(kDiffMark, tr("A \u2260 B"));
}

// The grid before GC: old slot o held the node that now sits in its new
// slot; a slot no move leaves from was collected (crossed).
void KvView::paintBeforeGc(QPainter& p, const SlotPainter& slot) const {
  const StepView& v = ctx_.view();
  std::vector<int32_t> oldNode(static_cast<size_t>(oldSlots_), -2);
  for (auto [o, n] : v.gc_moves)
    if (o >= 0 && o < oldSlots_) oldNode[static_cast<size_t>(o)] = n >= 0 && n < slots_ ? v.slot_to_node[static_cast<size_t>(n)] : -1;
  p.setPen(palette().windowText().color());
  p.drawText(8, oldTop_ - 3, tr("before GC: %1 slots (crossed = collected)").arg(oldSlots_));
  for (int o = 0; o < oldSlots_; ++o) {
    const QRect r = oldSlotRect(o);
    if (oldNode[static_cast<size_t>(o)] == -2) {
      p.setPen(QPen(QColor(200, 60, 60), 1));
      p.setBrush(QColor(250, 225, 225));
      p.drawRect(r);
      p.drawLine(r.topLeft(), r.bottomRight());
      p.drawLine(r.topRight(), r.bottomLeft());
    } else {
      slot.draw(r, oldNode[static_cast<size_t>(o)], o, false);
    }
  }
  p.setPen(palette().windowText().color());
  p.drawText(8, gridTop_ - 3, tr("after GC: %1 slots; arrows = compaction moves old \u2192 new").arg(slots_));
}

// The compaction moves old -> new as arrows between the two grids.
void KvView::paintGcMoves(QPainter& p) const {
  const StepView& v = ctx_.view();
  p.setRenderHint(QPainter::Antialiasing);
  for (auto [o, n] : v.gc_moves) {
    if (o == n || o < 0 || n < 0 || o >= oldSlots_ || n >= slots_) continue;
    const QPointF a = oldSlotRect(o).center() + QPointF(0, cell_ / 2.0 - 2), b = slotRect(n).center() - QPointF(0, cell_ / 2.0 - 2);
    QPainterPath path(a);
    path.cubicTo(a + QPointF(0, 24), b - QPointF(0, 24), b);
    p.setPen(QPen(QColor(200, 80, 0, 200), 1.6));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    const QPointF d = QPointF(0, -1);
    p.setBrush(QColor(200, 80, 0));
    p.drawPolygon(QPolygonF({b, b + QPointF(-4, 0) + d * 6, b + QPointF(4, 0) + d * 6}));
  }
}

void KvView::mousePressEvent(QMouseEvent* e) {
  const int s = slotAt(e->position().toPoint());
  if (s >= 0) ctx_.selectNode(ctx_.nodeInSlot(s));
}

bool KvView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const int s = slotAt(he->pos());
    if (s >= 0 && ctx_.loaded()) {
      const int32_t n = ctx_.nodeInSlot(s);
      const StepView& v = ctx_.view();
      QString t = tr("slot %1: ").arg(s);
      if (n < 0) t += tr("free");
      else
        t += tr("node %1 \"%2\", position %3, %4").arg(n).arg(token_label(*ctx_.shownDoc()->replay, v.nodes[static_cast<size_t>(n)].token, 24))
                 .arg(v.nodes[static_cast<size_t>(n)].depth).arg(status_text(v.nodes[static_cast<size_t>(n)].status));
      QToolTip::showText(he->globalPos(), t, this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

}  // namespace triescope::gui
