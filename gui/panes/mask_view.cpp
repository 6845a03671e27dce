#include "gui/panes/mask_view.h"

#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "core/analysis/batch_copies.h"
#include "core/common/error.h"
#include "gui/step_colors.h"

namespace triescope::gui {

namespace {
constexpr double kLabelCell = 13;  // from this zoom on, axes show token labels
QRgb blend(QRgb a, QColor b, double t) {
  return qRgb(int(qRed(a) * (1 - t) + b.red() * t), int(qGreen(a) * (1 - t) + b.green() * t), int(qBlue(a) * (1 - t) + b.blue() * t));
}
// Tick spacing in cells on a 1-2-5 ladder, at least `need` pixels apart
// for cells of `px` pixels.
int tick_step(double px, double need) {
  int step = 1;
  for (int k = 0; step * px < need; ++k) step = (k % 3 == 0) ? step * 2 : (k % 3 == 1) ? step * 5 / 2 : step * 2;
  return step;
}
}  // namespace

MaskView::MaskView(TraceContext& ctx, QWidget* parent) : QAbstractScrollArea(parent), ContextViewer(ctx) {
  viewport()->setMouseTracking(true);
  setMouseTracking(true);
  setMinimumSize(200, 160);
  // The explanation line sits in a bottom margin of the scroll area, under
  // the viewport (its geometry follows in resizeEvent).
  explainLabel_ = new QLabel(this);
  explainLabel_->setObjectName(QStringLiteral("maskExplanation"));
  explainLabel_->setWordWrap(true);
  explainLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  explainLabel_->setContentsMargins(4, 0, 4, 0);
  setViewportMargins(0, 0, 0, kExplainHeight);
  showPinned();
  watchContext();
}

int MaskView::rows() const {
  const auto& v = ctx_.view();
  return v.forward ? v.forward->mask.rows : 0;
}
int MaskView::cols() const {
  const auto& v = ctx_.view();
  return v.forward ? v.forward->mask.cols : 0;
}
int MaskView::leftMargin() const { return ch_ >= kLabelCell ? 150 : 48; }
int MaskView::topMargin() const { return cw_ >= kLabelCell ? 72 : 20; }

QRect MaskView::gridRect() const {
  const QRect vp = viewport()->rect();
  return QRect(leftMargin(), topMargin(), std::max(0, vp.width() - leftMargin()), std::max(0, vp.height() - topMargin() - kBottom));
}

void MaskView::onTraceLoaded(TraceContext&) {
  fitPending_ = true;
  shown_ = Shown{};
  copyTokensOf_ = nullptr;
  viewport()->update();
}

bool MaskView::sameAsShown() {
  // Compared in place and copied into the buffers already there: a fresh
  // 2 MB copy of a 4096 x 4096 mask per step cost more (page faults) than
  // the repaint it saves (docs/benchmarks-gui.md).
  const StepView& v = ctx_.view();
  bool same = true;
  auto keep = [&same](auto& mine, const auto& now) {
    if (same && mine.size() == now.size() && std::equal(now.begin(), now.end(), mine.begin())) return;
    same = false;
    mine.assign(now.begin(), now.end());
  };
  const bool draftNote = v.extra.is_object() && v.extra.contains(kDraftForwardsField);
  const int rows = v.forward ? v.forward->mask.rows : -1, cols = v.forward ? v.forward->mask.cols : -1;
  same = draftNote == shown_.draftNote && rows == shown_.rows && cols == shown_.cols;
  shown_.draftNote = draftNote;
  shown_.rows = rows;
  shown_.cols = cols;
  static const std::vector<int32_t> none32;
  static const std::vector<uint64_t> none64;
  const ForwardView* f = v.forward ? &*v.forward : nullptr;
  keep(shown_.queries, f ? f->queries : none32);
  keep(shown_.positions, f ? f->positions : none32);
  keep(shown_.slots, f ? f->slots : none32);
  keep(shown_.words, f ? f->mask.words : none64);
  owners_.resize(static_cast<size_t>(std::max(0, cols)));
  for (int c = 0; c < cols; ++c) owners_[static_cast<size_t>(c)] = ctx_.nodeInForwardSlot(c);
  keep(shown_.owners, owners_);
  return same;
}

void MaskView::onStepChanged(TraceContext& ctx) {
  // Diff marks and the tooltip depend on more than the pass: always repaint there.
  const bool same = sameAsShown() && !ctx.diffMode();
  pinnedRow_ = pinnedCol_ = -1;  // the context dropped the highlight with the step
  showPinned();
  if (!same) computeFaults();
  if (same && hoverRow_ < 0) return;
  hoverRow_ = hoverCol_ = -1;
  // Until the user zooms, every step is shown whole (the mask grows).
  if (fitPending_ && rows() > 0) fit();
  updateScrollBars();
  viewport()->update();
}

void MaskView::onSelectionChanged(TraceContext& ctx) {
  // Bring the selected row/column into view.
  const int r = ctx.rowOfNode(ctx.selectedNode()), c = ctx.forwardSlotOfNode(ctx.selectedNode());
  const QRect g = gridRect();
  if (c >= 0) {
    const int x = int(c * cw_);
    auto* h = horizontalScrollBar();
    if (x < h->value() || x + cw_ > h->value() + g.width()) h->setValue(int(x - g.width() / 2));
  }
  if (r >= 0) {
    const int y = int(r * ch_);
    auto* vb = verticalScrollBar();
    if (y < vb->value() || y + ch_ > vb->value() + g.height()) vb->setValue(int(y - g.height() / 2));
  }
  viewport()->update();
}

void MaskView::onHighlightChanged(TraceContext&) { viewport()->update(); }

void MaskView::setCellSize(double px) {
  const double c = std::clamp(px, 0.05, 64.0);
  if (c == cw_ && c == ch_) return;
  cw_ = ch_ = c;
  fitPending_ = false;
  updateScrollBars();
  viewport()->update();
}

void MaskView::zoomBy(double f) {
  cw_ = std::clamp(cw_ * f, 0.05, 64.0);
  ch_ = std::clamp(ch_ * f, 0.05, 64.0);
  fitPending_ = false;
  updateScrollBars();
  viewport()->update();
}

void MaskView::fit() {
  const int r = rows(), c = cols();
  fitPending_ = true;  // follow the mask's growth until the user zooms
  if (r == 0 || c == 0) return;
  const QRect vp = viewport()->rect();
  // Width and height fit separately: a beam step's mask is a few rows by
  // hundreds of slots, and square cells would make its rows a pixel tall.
  // Label margins are assumed first and dropped where the cells get too small.
  auto fitAxis = [](double avail, int n) { return std::clamp(avail / n, 0.05, 36.0); };
  cw_ = fitAxis(vp.width() - 150.0, c);
  ch_ = fitAxis(vp.height() - 72.0 - kBottom, r);
  if (ch_ < kLabelCell) cw_ = fitAxis(vp.width() - 48.0, c);
  if (cw_ < kLabelCell) ch_ = fitAxis(vp.height() - 20.0 - kBottom, r);
  // Keep cells from getting absurdly tall next to their width.
  ch_ = std::min(ch_, std::max(cw_ * 4, kLabelCell + 1));
  cw_ = std::min(cw_, std::max(ch_ * 4, kLabelCell + 1));
  updateScrollBars();
  horizontalScrollBar()->setValue(0);
  verticalScrollBar()->setValue(0);
  viewport()->update();
}

void MaskView::updateScrollBars() {
  const QRect g = gridRect();
  const int cw = int(std::ceil(cols() * cw_)), ch = int(std::ceil(rows() * ch_));
  horizontalScrollBar()->setRange(0, std::max(0, cw - g.width()));
  horizontalScrollBar()->setPageStep(std::max(1, g.width()));
  horizontalScrollBar()->setSingleStep(std::max(1, int(cw_)));
  verticalScrollBar()->setRange(0, std::max(0, ch - g.height()));
  verticalScrollBar()->setPageStep(std::max(1, g.height()));
  verticalScrollBar()->setSingleStep(std::max(1, int(ch_)));
}

void MaskView::resizeEvent(QResizeEvent* e) {
  QAbstractScrollArea::resizeEvent(e);
  const QRect vg = viewport()->geometry();
  explainLabel_->setGeometry(vg.left(), vg.bottom() + 1, vg.width(), kExplainHeight);
  if (fitPending_ && rows() > 0) fit();
  updateScrollBars();
}

QPoint MaskView::cellCenter(int row, int col) const {
  const QRect g = gridRect();
  return QPoint(int(g.left() + (col + 0.5) * cw_ - horizontalScrollBar()->value()),
                int(g.top() + (row + 0.5) * ch_ - verticalScrollBar()->value()));
}

QPair<int, int> MaskView::cellAt(QPoint p) const {
  const QRect g = gridRect();
  if (!g.contains(p)) return {-1, -1};
  const int c = int(std::floor((p.x() - g.left() + horizontalScrollBar()->value()) / cw_));
  const int r = int(std::floor((p.y() - g.top() + verticalScrollBar()->value()) / ch_));
  if (r < 0 || c < 0 || r >= rows() || c >= cols()) return {-1, -1};
  return {r, c};
}

QString MaskView::cellExplanation(int row, int col) const {
  const StepView& v = ctx_.view();
  if (!v.forward || row < 0 || col < 0 || row >= rows() || col >= cols()) return {};
  const MaskCellExplanation e = explain(row, col);
  QString s = QStringLiteral("query row %1, position id %2, writes slot %3; key slot %4\n")
                  .arg(row)
                  .arg(e.query_position)
                  .arg(e.query_slot)
                  .arg(col);
  s += e.bit ? QStringLiteral("ALLOWED (bit set)\n") : QStringLiteral("not allowed (bit clear)\n");
  // The short reason, in the rule's terms (docs/architecture.md): a query
  // attends to exactly its ancestors and itself in the token tree.
  QString why;
  switch (e.relation) {
    case CellRelation::self: why = QStringLiteral("the key is the query itself"); break;
    case CellRelation::parent:
    case CellRelation::ancestor:
    case CellRelation::prompt: why = QStringLiteral("the key is an ancestor of the query"); break;
    case CellRelation::free_slot: why = QStringLiteral("the slot holds no node"); break;
    case CellRelation::unknown_query: why = QStringLiteral("the row names no tree node"); break;
    case CellRelation::other_copy: why = QStringLiteral("the key is in another beam's copy"); break;
    case CellRelation::not_written: why = QStringLiteral("the key is past the row's position in its copy"); break;
    default: why = QStringLiteral("the key is not an ancestor of the query"); break;
  }
  s += QStringLiteral("why: ") + why + QStringLiteral("\n") + QString::fromStdString(e.sentence);
  if (!e.fault_text.empty())
    s += QStringLiteral("\n\u2717 the recorded mask disagrees with the rule: ") + QString::fromStdString(e.fault_text);
  if (ctx_.diffMode() && ctx_.marks().mask_cells.count({row, col})) s += QStringLiteral("\n\u2260 differs between trace A and trace B");
  return s;
}

MaskCellSource MaskView::cellSource() const {
  MaskCellSource src;
  const StepView& v = ctx_.view();
  const TraceDocument* doc = ctx_.shownDoc();
  if (!doc || !v.forward) return src;
  const TraceReplay& t = *doc->replay;
  src.view = &v;
  src.pass = &*v.forward;
  src.layout = &ctx_.forwardLayout();
  src.prompt_len = trace_prompt_length(t);
  src.token_text = [&t](int32_t tok) { return token_label(t, tok, 24).toStdString(); };
  try {
    src.copies = mask_copy_layout(t);
    if (src.copies && (copyTokensOf_ != doc || copyTokensStep_ != v.step)) {
      copyTokensOf_ = doc;
      copyTokensStep_ = v.step;
      copyTokens_.clear();
      copyTokens_ = batch_copy_tokens(t, v.step);
    }
  } catch (const Error&) {
    copyTokens_.clear();  // the copies' tokens go unnamed; the check's own errors show on the cell
  }
  src.copy_tokens = &copyTokens_;
  return src;
}

MaskCellExplanation MaskView::explain(int row, int col) const { return mask_cell_explain(cellSource(), row, col); }

MaskCellHighlight MaskView::highlightOf(const MaskCellExplanation& e) const {
  return {.row = e.row, .col = e.col, .query = e.query, .key = e.key, .path = e.path, .querySlot = e.query_slot, .keySlot = e.col,
          .violation = !e.agrees || !e.row_faults.empty()};
}

void MaskView::hoverCell(int row, int col) {
  if (row >= 0) ctx_.setHighlight(highlightOf(explain(row, col)));
  else if (pinnedRow_ >= 0) ctx_.setHighlight(highlightOf(explain(pinnedRow_, pinnedCol_)));
  else ctx_.setHighlight({});
}

void MaskView::pinCell(int row, int col) {
  const bool valid = ctx_.view().forward && row >= 0 && col >= 0 && row < rows() && col < cols();
  pinnedRow_ = valid ? row : -1;
  pinnedCol_ = valid ? col : -1;
  showPinned();
  ctx_.setHighlight(valid ? highlightOf(explain(row, col)) : MaskCellHighlight{});
  viewport()->update();
}

QString MaskView::pinnedText() const { return explainLabel_->text(); }

void MaskView::showPinned() {
  if (pinnedRow_ < 0) {
    explainLabel_->setStyleSheet({});
    explainLabel_->setText(ctx_.loaded() && ctx_.view().forward ? tr("Hover or click a mask cell: why it is set or not.") : QString());
    explainLabel_->setToolTip({});
    return;
  }
  const MaskCellExplanation e = explain(pinnedRow_, pinnedCol_);
  QString t = QString::fromStdString(e.sentence);
  if (!e.fault_text.empty()) t = QStringLiteral("\u2717 ") + t + QStringLiteral(" \u2014 ") + QString::fromStdString(e.fault_text);
  explainLabel_->setStyleSheet(e.fault_text.empty() ? QString() : QStringLiteral("color: rgb(%1, %2, %3);").arg(kRuleViolation.red()).arg(kRuleViolation.green()).arg(kRuleViolation.blue()));
  explainLabel_->setText(t);
  explainLabel_->setToolTip(t);
}

// mask_check over the shown pass, once per step: O(rows x columns), so only
// up to kMaxCheckedCells (a hovered cell is checked by its row anyway).
void MaskView::computeFaults() {
  faultCells_.clear();
  faultRows_.clear();
  faultCount_ = 0;
  faultsSkipped_ = false;
  const StepView& v = ctx_.view();
  const TraceDocument* doc = ctx_.shownDoc();
  if (!v.forward || !doc) return;
  const ForwardView& f = *v.forward;
  if (int64_t{f.mask.rows} * f.mask.cols > kMaxCheckedCells) {
    faultsSkipped_ = true;
    return;
  }
  std::vector<MaskViolation> out;
  constexpr size_t kMaxMarks = 100000;
  try {
    if (const auto copies = mask_copy_layout(*doc->replay)) faultCount_ = mask_check_copies(v, f, copies->region, copies->prompt, out, kMaxMarks);
    else faultCount_ = mask_check_tree(v, f, ctx_.forwardLayout(), out, kMaxMarks);
  } catch (const Error&) {
    faultsSkipped_ = true;  // the hovered cell names the check's error
  }
  for (const MaskViolation& m : out) {
    if (m.fault == MaskFault::wrong_position || m.fault == MaskFault::wrong_slot) faultRows_.insert(m.row);
    else if (m.slot >= 0 && m.slot < f.mask.cols) faultCells_.emplace(m.row, m.slot);
  }
}

void MaskView::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  paintTo(p, viewport()->rect(), horizontalScrollBar()->value(), verticalScrollBar()->value());
}

// One paint's geometry: the grid rect within `area`, the scroll offsets and
// cell sizes, the mask's size and the selected row and column.
struct MaskView::Frame {
  QRect area, g;
  int sx, sy, L, T, R, C, selRow, selCol;
  double cw, ch;
  int r0, r1, c0, c1;  // rows and columns in view
  QFont font;          // axis labels
  QColor text, selText;
};

void MaskView::paintTo(QPainter& p, QRect area, int sx, int sy) const {
  p.fillRect(area, palette().window());
  const StepView& v = ctx_.view();
  if (!v.forward || rows() == 0) {
    paintNoPass(p, area);
    return;
  }
  Frame fr;
  fr.area = area;
  fr.sx = sx;
  fr.sy = sy;
  fr.L = leftMargin();
  fr.T = topMargin();
  fr.g = QRect(area.left() + fr.L, area.top() + fr.T, std::max(0, area.width() - fr.L), std::max(0, area.height() - fr.T - kBottom));
  fr.R = rows();
  fr.C = cols();
  fr.selRow = ctx_.rowOfNode(ctx_.selectedNode());
  fr.selCol = ctx_.forwardSlotOfNode(ctx_.selectedNode());
  fr.cw = cw_;
  fr.ch = ch_;
  paintBitmap(p, fr);
  paintFaults(p, fr);  // under the diff marks: in diff mode "A != B" is the question
  paintMarks(p, fr);
  // Axes. Rows: query node, token and the position id the backend recorded;
  // columns: KV slot and the token in it; the strip below: each slot's
  // position id (its node's depth).
  fr.font = font();
  fr.font.setPointSizeF(8);
  p.setFont(fr.font);
  fr.r0 = std::max(0, int(sy / fr.ch));
  fr.r1 = std::min(fr.R - 1, int((sy + fr.g.height()) / fr.ch));
  fr.c0 = std::max(0, int(sx / fr.cw));
  fr.c1 = std::min(fr.C - 1, int((sx + fr.g.width()) / fr.cw));
  fr.text = palette().windowText().color();
  fr.selText = QColor(0, 90, 180);
  paintRowLabels(p, fr);
  paintColumnLabels(p, fr);
  paintPositionStrip(p, fr);
  paintLegend(p, fr);
}

void MaskView::paintNoPass(QPainter& p, QRect area) const {
  QString msg = ctx_.loaded() ? tr("no forward pass recorded at this step") : tr("no trace loaded");
  // Speculative draft steps: the target's pass is at the verify step.
  if (ctx_.loaded() && ctx_.view().extra.is_object() && ctx_.view().extra.contains(kDraftForwardsField))
    msg = tr("draft step: the draft model's %1 pass(es) are in the record's draft_forwards;\n"
             "the target scores these drafts in one forest pass at the next (verify) step")
              .arg(ctx_.view().extra[kDraftForwardsField].is_array() ? ctx_.view().extra[kDraftForwardsField].size() : 0);
  p.drawText(area, Qt::AlignCenter, msg);
}

// The mask bitmap, sampled per screen pixel, so its cost is the viewport's
// size whatever the mask's (a 4096 x 4096 mask steps as fast as 8 x 8).
void MaskView::paintBitmap(QPainter& p, const Frame& fr) const {
  const auto& f = *ctx_.view().forward;
  const double cw = fr.cw, chh = fr.ch;
  const int sx = fr.sx, sy = fr.sy;
  const QSize isz(std::max(1, fr.g.width()), std::max(1, fr.g.height()));
  // Every pixel is written below, so the kept image needs no clearing.
  if (bitmap_.size() != isz || bitmap_.format() != QImage::Format_RGB32) bitmap_ = QImage(isz, QImage::Format_RGB32);
  QImage& img = bitmap_;
  colOf_.resize(static_cast<size_t>(img.width()));
  colEdge_.resize(static_cast<size_t>(img.width()));
  auto& colOf = colOf_;
  auto& colEdge = colEdge_;
  for (int x = 0; x < img.width(); ++x) {
    colOf[static_cast<size_t>(x)] = int((x + sx) / cw);
    colEdge[static_cast<size_t>(x)] = cw >= 5 && (x == 0 || int((x + sx) / cw) != int((x + sx - 1) / cw));
  }
  const QRgb bg = palette().window().color().rgb();
  const QRgb on = kMaskAllowed.rgb(), off = kMaskForbidden.rgb();
  const QColor gridc = kMaskGrid;
  for (int y = 0; y < img.height(); ++y) {
    QRgb* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    const int r = int((y + sy) / chh);
    if (r >= fr.R) {
      std::fill(line, line + img.width(), bg);
      continue;
    }
    const bool rowEdge = chh >= 5 && (y == 0 || int((y + sy - 1) / chh) != r);
    const uint64_t* bits = f.mask.row(r);
    const bool rowSel = r == fr.selRow, rowHover = r == hoverRow_;
    for (int x = 0; x < img.width(); ++x) {
      const int col = colOf[static_cast<size_t>(x)];
      if (col >= fr.C) {
        line[x] = bg;
        continue;
      }
      const bool set = (bits[col >> 6] >> (col & 63)) & 1u;
      QRgb px = set ? on : off;
      // Selection tints only masked cells, so the selected row still reads
      // as its set of ancestors; the frame drawn below marks the band.
      if (!set && (rowSel || col == fr.selCol)) px = blend(px, kSelection, 0.35);
      else if (!set && (rowHover || col == hoverCol_)) px = blend(px, kSelection, 0.15);
      if (rowEdge || colEdge[static_cast<size_t>(x)]) px = blend(px, gridc, 0.6);
      line[x] = px;
    }
  }
  p.drawImage(fr.g.topLeft(), img);
}

// The selected row and column framed; diff marks: outline and cross (zoomed
// in) or a solid cell (zoomed out).
void MaskView::paintMarks(QPainter& p, const Frame& fr) const {
  const QRect& g = fr.g;
  const double cw = fr.cw, chh = fr.ch;
  p.save();
  p.setClipRect(g);
  p.setPen(QPen(kSelection, 2));
  p.setBrush(Qt::NoBrush);
  if (fr.selRow >= 0) p.drawRect(QRectF(g.left() - fr.sx - 1, g.top() + fr.selRow * chh - fr.sy, fr.C * cw + 2, chh));
  if (fr.selCol >= 0 && fr.selCol < fr.C) p.drawRect(QRectF(g.left() + fr.selCol * cw - fr.sx, g.top() - fr.sy - 1, cw, fr.R * chh + 2));
  if (ctx_.diffMode()) {
    for (auto [r, col] : ctx_.marks().mask_cells) {
      const double y = g.top() + r * chh - fr.sy;
      if (col < 0) {
        p.fillRect(QRectF(g.left(), y, g.width(), std::max(chh, 2.0)), QColor(220, 0, 140, 90));
        continue;
      }
      const QRectF cell(g.left() + col * cw - fr.sx, y, std::max(cw, 3.0), std::max(chh, 3.0));
      if (cw >= 6 && chh >= 6) {
        p.setPen(QPen(kDiffMark, 2.5));
        p.drawRect(cell.adjusted(1, 1, -1, -1));
        p.drawLine(cell.topLeft() + QPointF(2, 2), cell.bottomRight() - QPointF(2, 2));
      } else {
        p.fillRect(cell, kDiffMark);
      }
    }
  }
  p.restore();
}

// Rows: "#node token p<pos>" when zoomed in, else row numbers on a 1-2-5 ladder.
void MaskView::paintRowLabels(QPainter& p, const Frame& fr) const {
  const StepView& v = ctx_.view();
  const auto& f = *v.forward;
  const TraceDocument* doc = ctx_.shownDoc();
  const double chh = fr.ch;
  const bool rowLabels = chh >= kLabelCell;
  const int rowEvery = rowLabels ? 1 : tick_step(chh, 14);
  p.save();
  p.setClipRect(QRect(fr.area.left(), fr.g.top(), fr.L, fr.g.height()));
  for (int r = fr.r0; r <= fr.r1; ++r) {
    if (r % rowEvery && r != fr.selRow) continue;
    const double y = fr.g.top() + r * chh - fr.sy;
    QString t;
    if (rowLabels) {
      const int32_t q = f.queries.size() > static_cast<size_t>(r) ? f.queries[static_cast<size_t>(r)] : -1;
      const QString tok = node_token_label(v, *doc->replay, q, 10, QStringLiteral("?"));
      t = QStringLiteral("#%1 %2  p%3").arg(q).arg(tok).arg(f.positions[static_cast<size_t>(r)]);
    } else {
      t = QString::number(r);
    }
    const bool diffPos = ctx_.diffMode() && ctx_.marks().positions.count(r);
    p.setPen(r == fr.selRow ? fr.selText : diffPos ? kDiffMark : faultRows_.count(r) ? kRuleViolation : fr.text);
    p.drawText(QRectF(fr.area.left() + 2, y + chh / 2 - 8, fr.L - 6, 16), Qt::AlignRight | Qt::AlignVCenter, t);
  }
  p.restore();
}

// Columns: "slot token" rotated when zoomed in, else slot numbers with ticks.
void MaskView::paintColumnLabels(QPainter& p, const Frame& fr) const {
  const StepView& v = ctx_.view();
  const TraceDocument* doc = ctx_.shownDoc();
  const QFontMetrics fm(fr.font);
  const QRect& g = fr.g;
  const double cw = fr.cw;
  const bool colLabels = cw >= kLabelCell;
  const int colEvery = colLabels ? 1 : tick_step(cw, fm.horizontalAdvance(QString::number(fr.C)) + 8);
  p.save();
  p.setClipRect(QRect(g.left(), fr.area.top(), g.width(), fr.T));
  for (int col = fr.c0; col <= fr.c1; ++col) {
    if (col % colEvery && col != fr.selCol) continue;
    const double x = g.left() + col * cw - fr.sx;
    p.setPen(col == fr.selCol ? fr.selText : fr.text);
    if (colLabels) {
      const int32_t k = ctx_.nodeInForwardSlot(col);
      const QString t = QStringLiteral("%1 %2").arg(col).arg(node_token_label(v, *doc->replay, k, 10, QStringLiteral("free")));
      p.save();
      p.translate(x + cw / 2 + 4, g.top() - 4);
      p.rotate(-60);
      p.drawText(QPointF(0, 0), t);
      p.restore();
    } else {
      p.drawLine(QPointF(x + cw / 2, g.top() - 4), QPointF(x + cw / 2, g.top() - 1));
      p.drawText(QPointF(x + cw / 2 - fm.horizontalAdvance(QString::number(col)) / 2.0, g.top() - 6), QString::number(col));
    }
  }
  p.restore();
}

// The strip under the grid: each slot's position id (its node's depth).
void MaskView::paintPositionStrip(QPainter& p, const Frame& fr) const {
  const StepView& v = ctx_.view();
  const QRect& g = fr.g;
  const double cw = fr.cw;
  const QRect strip(g.left(), g.bottom() + 4, g.width(), kBottom - 8);
  p.setPen(fr.text);
  p.drawText(QRect(fr.area.left(), strip.top(), fr.L - 6, strip.height()), Qt::AlignRight | Qt::AlignVCenter, tr("key pos"));
  p.save();
  p.setClipRect(strip);
  const bool stripText = cw >= 16;
  int maxDepth = 1;
  for (const auto& nd : v.nodes) maxDepth = std::max(maxDepth, nd.depth);
  for (int col = fr.c0; col <= fr.c1; ++col) {
    const int32_t k = ctx_.nodeInForwardSlot(col);
    const QRectF cell(g.left() + col * cw - fr.sx, strip.top(), std::max(cw, 1.0), strip.height());
    if (k < 0) {
      p.fillRect(cell, Qt::white);
      continue;
    }
    const int depth = v.nodes[static_cast<size_t>(k)].depth;
    // Shade by depth so the staircase of positions reads even zoomed out.
    const int shade = 245 - std::min(90, depth * 90 / maxDepth);
    p.fillRect(cell, col == fr.selCol ? kSelection : QColor(shade, shade, 255));
    if (cw >= 4) {
      p.setPen(Qt::white);
      p.drawLine(cell.topRight(), cell.bottomRight());
    }
    if (stripText) {
      p.setPen(Qt::black);
      p.drawText(cell, Qt::AlignCenter, QString::number(depth));
    }
  }
  p.restore();
}

// Legend and size, as far as the margins have room.
void MaskView::paintLegend(QPainter& p, const Frame& fr) const {
  const QRect& area = fr.area;
  p.setPen(fr.text);
  const int ly = area.top() + 2;
  p.fillRect(QRect(area.left() + 4, ly + 2, 10, 10), kMaskAllowed);
  p.drawText(QPoint(area.left() + 18, ly + 11), tr("attends"));
  if (fr.T >= 30) {
    p.fillRect(QRect(area.left() + 4, ly + 16, 10, 10), kMaskForbidden);
    p.drawRect(QRect(area.left() + 4, ly + 16, 10, 10));
    p.drawText(QPoint(area.left() + 18, ly + 25), tr("masked"));
  }
  if (fr.T >= 60 && fr.L >= 100) {
    p.drawText(QPoint(area.left() + 4, ly + 40), tr("%1 queries \u00d7 %2 slots").arg(fr.R).arg(fr.C));
    p.drawText(QPoint(area.left() + 4, ly + 54), tr("row: #node token p<pos>"));
  }
  if (ctx_.diffMode()) {
    p.fillRect(QRect(area.left() + 74, ly + 2, 10, 10), kDiffMark);
    p.drawText(QPoint(area.left() + 88, ly + 11), tr("A \u2260 B"));
  }
  // check's verdict on this pass, right of the legend.
  const int fx = area.left() + (ctx_.diffMode() ? 140 : 74);
  if (faultCount_ > 0) {
    p.setPen(kRuleViolation);
    p.drawText(QPoint(fx, ly + 11), tr("\u2717 %n cell(s)/row(s) break the rule", nullptr, int(std::min<int64_t>(faultCount_, INT32_MAX))));
  } else if (faultsSkipped_) {
    p.drawText(QPoint(fx, ly + 11), tr("rule marks skipped above %1 cells: hover a cell to check it").arg(kMaxCheckedCells));
  }
}

// Cells `check` faults: a red frame and cross (zoomed in) or a solid cell;
// the highlighted (hovered or pinned) cell: a gold frame.
void MaskView::paintFaults(QPainter& p, const Frame& fr) const {
  const QRect& g = fr.g;
  const double cw = fr.cw, chh = fr.ch;
  p.save();
  p.setClipRect(g);
  p.setBrush(Qt::NoBrush);
  for (auto [r, col] : faultCells_) {
    const QRectF cell(g.left() + col * cw - fr.sx, g.top() + r * chh - fr.sy, std::max(cw, 3.0), std::max(chh, 3.0));
    if (!cell.intersects(g)) continue;
    if (cw >= 6 && chh >= 6) {
      p.setPen(QPen(kRuleViolation, 2.5));
      p.drawRect(cell.adjusted(1, 1, -1, -1));
      p.drawLine(cell.topRight() + QPointF(-2, 2), cell.bottomLeft() + QPointF(2, -2));
    } else {
      p.fillRect(cell, kRuleViolation);
    }
  }
  const MaskCellHighlight& h = ctx_.highlight();
  if (!h.empty() && h.row < fr.R && h.col < fr.C) {
    p.setPen(QPen(kCellHighlight, 3));
    p.drawRect(QRectF(g.left() + h.col * cw - fr.sx - 1.5, g.top() + h.row * chh - fr.sy - 1.5, std::max(cw, 3.0) + 3, std::max(chh, 3.0) + 3));
  }
  p.restore();
}

QImage MaskView::renderFull(double cellPx) const {
  MaskView* self = const_cast<MaskView*>(this);
  const double oldW = cw_, oldH = ch_;
  self->cw_ = cellPx;
  self->ch_ = cellPx * (ch_ / cw_);
  const QSize sz(leftMargin() + int(std::ceil(cols() * cw_)) + 2, topMargin() + int(std::ceil(rows() * ch_)) + kBottom + 2);
  QImage img(sz, QImage::Format_ARGB32_Premultiplied);
  QPainter p(&img);
  paintTo(p, QRect(QPoint(0, 0), sz), 0, 0);
  p.end();
  self->cw_ = oldW;
  self->ch_ = oldH;
  return img;
}

void MaskView::mouseMoveEvent(QMouseEvent* e) {
  const auto [r, c] = cellAt(e->position().toPoint());
  if (r != hoverRow_ || c != hoverCol_) {
    hoverRow_ = r;
    hoverCol_ = c;
    hoverCell(r, c);
    viewport()->update();
  }
}

void MaskView::leaveEvent(QEvent* e) {
  if (hoverRow_ >= 0) hoverCell(-1, -1);  // back to the pinned cell, if any
  hoverRow_ = hoverCol_ = -1;
  viewport()->update();
  QAbstractScrollArea::leaveEvent(e);
}

void MaskView::mousePressEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  const QRect g = gridRect();
  const auto [r, c] = cellAt(pos);
  if (r >= 0) {
    hoverRow_ = r;  // the pointer is on it (a press may come without a move)
    hoverCol_ = c;
    ctx_.selectNode(ctx_.nodeOfRow(r));  // a cell selects its query node
    pinCell(r, c);                       // and says why it is set or not
    return;
  }
  // The column axis and the position strip select the slot's node.
  if (pos.x() >= g.left() && (pos.y() < g.top() || pos.y() > g.bottom())) {
    const int col = int(std::floor((pos.x() - g.left() + horizontalScrollBar()->value()) / cw_));
    if (col >= 0 && col < cols()) ctx_.selectNode(ctx_.nodeInForwardSlot(col));
  } else if (pos.x() < g.left() && pos.y() >= g.top() && pos.y() <= g.bottom()) {
    const int row = int(std::floor((pos.y() - g.top() + verticalScrollBar()->value()) / ch_));
    if (row >= 0 && row < rows()) ctx_.selectNode(ctx_.nodeOfRow(row));
  }
}

void MaskView::wheelEvent(QWheelEvent* e) {
  if (e->modifiers() & Qt::ControlModifier) {
    // Zoom about the cursor.
    const QPointF pos = e->position();
    const QRect g = gridRect();
    const double fx = (pos.x() - g.left() + horizontalScrollBar()->value()) / cw_;
    const double fy = (pos.y() - g.top() + verticalScrollBar()->value()) / ch_;
    zoomBy(std::pow(1.0015, e->angleDelta().y()));
    horizontalScrollBar()->setValue(int(fx * cw_ - (pos.x() - gridRect().left())));
    verticalScrollBar()->setValue(int(fy * ch_ - (pos.y() - gridRect().top())));
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
