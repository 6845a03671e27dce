#include "gui/panes/verify_pane.h"

#include <QEvent>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QTabWidget>
#include <QTableWidget>
#include <QToolTip>
#include <QTreeView>
#include <QVBoxLayout>

#include <cmath>
#include <set>

#include "core/analysis/verify_kind.h"
#include "core/trace/dsbd_layers_verify_record.h"
#include "core/trace/trace.h"
#include "gui/json_tree_model.h"
#include "gui/panes/json_pane.h"
#include "gui/step_colors.h"

namespace triescope::gui {

QColor decision_color(Decision d) {
  switch (d) {
    case Decision::drafted: return {255, 224, 130};
    case Decision::accepted: return status_color(NodeStatus::accepted).lighter(150);
    case Decision::rejected: return status_color(NodeStatus::rejected).lighter(150);
    case Decision::untested: return {250, 218, 218};
    case Decision::parent_rejected: return {222, 200, 200};
    case Decision::not_verified: return {232, 232, 232};
    case Decision::sampled_residual: return {206, 160, 222};
    case Decision::sampled_target: return status_color(NodeStatus::live).lighter(150);
    case Decision::window: return {179, 205, 240};
    case Decision::pending: return status_color(NodeStatus::accepted).lighter(175);
    case Decision::not_computed: return {255, 255, 255};
  }
  return Qt::white;
}

namespace {
QString explain(Decision d) {
  switch (d) {
    case Decision::drafted: return QObject::tr("drafted (verified at the next step)");
    case Decision::accepted: return QObject::tr("accepted (u < accept prob)");
    case Decision::rejected: return QObject::tr("rejected (u >= accept prob)");
    case Decision::untested: return QObject::tr("rejected untested (layer already full / earlier draft rejected)");
    case Decision::parent_rejected: return QObject::tr("parent rejected");
    case Decision::not_verified: return QObject::tr("not verified (stopped earlier)");
    case Decision::sampled_residual: return QObject::tr("sampled from residual p' - q");
    case Decision::sampled_target: return QObject::tr("sampled from the target");
    case Decision::window: return QObject::tr("Jacobi window guess (computed, not accepted)");
    case Decision::pending: return QObject::tr("pending token (accepted, fed now)");
    case Decision::not_computed: return QObject::tr("not computed (trie depth D / budget B)");
  }
  return {};
}

bool dashed(Decision d) { return d == Decision::untested || d == Decision::not_verified || d == Decision::not_computed; }

QString num(double x, int prec = 2) { return std::isnan(x) ? QStringLiteral("-") : QString::number(x, 'f', prec); }

QColor tag_color(VerifyRowTag t) {
  switch (t) {
    case VerifyRowTag::neutral: return {150, 150, 150};
    case VerifyRowTag::draft: return {230, 170, 0};
    case VerifyRowTag::passed: return status_color(NodeStatus::live);
    case VerifyRowTag::stopped: return status_color(NodeStatus::rejected);
    case VerifyRowTag::matched: return status_color(NodeStatus::accepted);
    case VerifyRowTag::window: return {70, 110, 180};
  }
  return {150, 150, 150};
}

// Whether the shown trace's header names a verification kind.
bool verifying_trace(const TraceContext& ctx) { return ctx.loaded() && !trace_verify_kind(ctx.shownDoc()->replay->header()).empty(); }

constexpr double kHead = 240, kRowH = 54, kChipH = 40, kGap = 6, kPad = 8;
}  // namespace

// ---------------------------------------------------------------- canvas

VerifyCanvas::VerifyCanvas(TraceContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  setMouseTracking(false);
  setBackgroundRole(QPalette::Base);
  setAutoFillBackground(true);
}

void VerifyCanvas::setInfo(const VerifyInfo* info, const TraceReplay* replay) {
  info_ = info;
  replay_ = replay;
  relayout();
  update();
}

void VerifyCanvas::setSelected(int32_t node) {
  if (node == selected_) return;
  selected_ = node;
  update();
}

int32_t VerifyCanvas::nodeAt(QPointF p) const {
  for (const Chip& c : chips_)
    if (c.rect.contains(p)) return c.c.node;
  return -1;
}

VerifyCanvas::Chip VerifyCanvas::makeChip(const VerifyRowChip& rc, double x, double y) const {
  QFont fb = font();
  fb.setBold(true);
  const QFontMetricsF fm(font()), fmb(fb);
  const VerifyChip& c = rc.chip;
  Chip ch;
  ch.c = c;
  ch.line1 = c.token >= 0 ? token_label(*replay_, c.token, 12) : QStringLiteral("?");
  ch.line2 = QString::fromStdString(rc.label);
  const double w = std::max({fmb.horizontalAdvance(ch.line1), fm.horizontalAdvance(ch.line2), 36.0}) + 14;
  ch.rect = QRectF(x, y + (kRowH - kChipH) / 2, w, kChipH);
  ch.tip = tr("%1\nnode %2, token %3 \"%4\"").arg(explain(c.decision)).arg(c.node).arg(c.token).arg(ch.line1);
  if (c.beam >= 0) ch.tip += tr("\ndraft beam %1 of its layer").arg(c.beam);
  if (c.parent_beam >= 0) ch.tip += tr(", parent beam %1").arg(c.parent_beam);
  if (!std::isnan(c.accept_prob)) ch.tip += tr("\naccept prob min(1, p/q) = %1, u = %2").arg(num(c.accept_prob, 4), num(c.u, 4));
  if (!std::isnan(c.p)) ch.tip += tr("\np = %1 (target), q = %2 (draft)").arg(num(c.p, 4), num(c.q, 4));
  else if (!std::isnan(c.q)) ch.tip += tr("\nq_beam = %1 (draft)").arg(num(c.q, 4));
  if (!std::isnan(c.prob)) ch.tip += tr("\nprobability of the sampled pair %1").arg(num(c.prob, 4));
  return ch;
}

double VerifyCanvas::addRow(const VerifyRow& row, double y, std::set<Decision>& used) {
  rows_.push_back(Row{y, QString::fromStdString(row.head1), QString::fromStdString(row.head2), QString::fromStdString(row.head3), tag_color(row.tag)});
  double x = kHead;
  for (const VerifyRowChip& rc : row.chips) {
    chips_.push_back(makeChip(rc, x, y));
    used.insert(rc.chip.decision);
    x += chips_.back().rect.width() + kGap;
  }
  return x;
}

// Only the decisions present in this step, wrapped to the drawing's width.
void VerifyCanvas::layoutLegend(double y, double maxX, const std::set<Decision>& used) {
  const QFontMetricsF fm(font());
  legendY_ = y + 4;
  double lx = kPad;
  int lines = 1;
  const double avail = std::max(480.0, maxX);
  for (Decision d : used) {
    legend_.emplace_back(d, explain(d));
    const double w = 22 + fm.horizontalAdvance(explain(d)) + 16;
    if (lx + w > avail) {
      lx = kPad;
      ++lines;
    }
    lx += w;
  }
  size_ = QSize(static_cast<int>(std::ceil(maxX + kPad)), static_cast<int>(std::ceil(legendY_ + lines * 20 + 6)));
}

void VerifyCanvas::relayout() {
  chips_.clear();
  rows_.clear();
  legend_.clear();
  const VerifyKindSpec* spec = info_ && !info_->empty() && replay_ ? verify_kind_find(info_->kind) : nullptr;
  if (!spec) {
    size_ = QSize(200, 40);
    updateGeometry();
    return;
  }
  // The rows are the kind's (core/analysis/verify_kind.h): the canvas draws any kind alike.
  std::set<Decision> used;
  double y = kPad, maxX = kHead;
  for (const VerifyRow& row : spec->rows(*info_, ctx_.view())) {
    maxX = std::max(maxX, addRow(row, y, used));
    y += kRowH;
  }
  layoutLegend(y, maxX, used);
  updateGeometry();
  resize(size_.expandedTo(parentWidget() ? parentWidget()->size() : QSize()));
}

void VerifyCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  if (!info_ || info_->empty()) return;
  QFont fb = font();
  fb.setBold(true);
  for (const Row& r : rows_) {
    p.setPen(Qt::NoPen);
    p.setBrush(r.tag);
    p.drawRect(QRectF(2, r.y + 6, 4, kRowH - 12));
    p.setPen(QColor(235, 235, 238));
    p.drawLine(QPointF(0, r.y + kRowH - 0.5), QPointF(width(), r.y + kRowH - 0.5));
    p.setPen(Qt::black);
    p.setFont(fb);
    p.drawText(QRectF(12, r.y + 3, kHead - 16, 16), Qt::AlignLeft | Qt::AlignVCenter, r.head1);
    p.setFont(font());
    p.setPen(QColor(50, 50, 50));
    p.drawText(QRectF(12, r.y + 19, kHead - 16, 16), Qt::AlignLeft | Qt::AlignVCenter, r.head2);
    p.setPen(r.tag.darker(130));
    p.drawText(QRectF(12, r.y + 35, kHead - 16, 16), Qt::AlignLeft | Qt::AlignVCenter, r.head3);
  }
  for (const Chip& c : chips_) {
    const Decision d = c.c.decision;
    QPen pen(decision_color(d).darker(d == Decision::not_computed ? 160 : 140), 1.3);
    if (dashed(d)) pen.setStyle(Qt::DashLine);
    if (d == Decision::pending) pen = QPen(status_color(NodeStatus::accepted), 2.5);
    if (c.c.node >= 0 && c.c.node == selected_) pen = QPen(kSelection.darker(110), 3.5);
    p.setPen(pen);
    p.setBrush(decision_color(d));
    p.drawRoundedRect(c.rect, 5, 5);
    if (d == Decision::parent_rejected) {
      p.setBrush(QBrush(QColor(180, 120, 120), Qt::BDiagPattern));
      p.setPen(Qt::NoPen);
      p.drawRoundedRect(c.rect.adjusted(1, 1, -1, -1), 5, 5);
    }
    p.setPen(d == Decision::not_verified || d == Decision::not_computed ? QColor(120, 120, 120) : Qt::black);
    p.setFont(fb);
    p.drawText(QRectF(c.rect.left(), c.rect.top() + 2, c.rect.width(), c.rect.height() / 2), Qt::AlignCenter, c.line1);
    p.setFont(font());
    p.setPen(QColor(60, 60, 60));
    p.drawText(QRectF(c.rect.left(), c.rect.center().y(), c.rect.width(), c.rect.height() / 2 - 2), Qt::AlignCenter, c.line2);
  }
  // Legend: only the decisions present in this step.
  double lx = kPad, ly = legendY_;
  const double avail = std::max(480.0, double(size_.width()));
  const QFontMetricsF fm(font());
  for (const auto& [d, text] : legend_) {
    const double w = 22 + fm.horizontalAdvance(text) + 16;
    if (lx + w > avail) {
      lx = kPad;
      ly += 20;
    }
    QPen pen(decision_color(d).darker(140), 1.2);
    if (dashed(d)) pen.setStyle(Qt::DashLine);
    p.setPen(pen);
    p.setBrush(decision_color(d));
    p.drawRoundedRect(QRectF(lx, ly + 3, 16, 13), 3, 3);
    p.setPen(QColor(40, 40, 40));
    p.drawText(QRectF(lx + 20, ly, w - 20, 18), Qt::AlignLeft | Qt::AlignVCenter, text);
    lx += w;
  }
}

void VerifyCanvas::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  const int32_t n = nodeAt(e->position());
  if (n >= 0) ctx_.selectNode(n);
}

bool VerifyCanvas::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    for (const Chip& c : chips_)
      if (c.rect.contains(he->pos())) {
        QToolTip::showText(he->globalPos(), c.tip, this);
        return true;
      }
    QToolTip::hideText();
    e->ignore();
    return true;
  }
  return QWidget::event(e);
}

// ------------------------------------------------------------------ pane

VerifyPane::VerifyPane(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::RichText);
  summary_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  canvas_ = new VerifyCanvas(ctx_, this);
  scroll_ = new QScrollArea(this);
  scroll_->setWidget(canvas_);
  scroll_->setWidgetResizable(false);
  scroll_->setBackgroundRole(QPalette::Base);
  table_ = new QTableWidget(this);
  table_->setColumnCount(10);
  table_->setHorizontalHeaderLabels({tr("layer"), tr("beam"), tr("node"), tr("token"), tr("decision"), tr("accept prob"), tr("u"),
                                     tr("p (target)"), tr("q (draft)"), tr("sampled prob")});
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) {
    const QTableWidgetItem* it = table_->item(row, 2);
    if (it && it->data(Qt::UserRole).toInt() >= 0) ctx_.selectNode(it->data(Qt::UserRole).toInt());
  });
  model_ = new JsonTreeModel(this);
  raw_ = JsonPane::treeView(model_, this);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(scroll_, tr("Layers"));
  tabs_->addTab(table_, tr("Table"));
  tabs_->addTab(raw_, tr("Raw record"));
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(2, 2, 2, 2);
  l->addWidget(summary_);
  l->addWidget(tabs_, 1);
  watchContext();
}

void VerifyPane::onTraceLoaded(TraceContext& ctx) {
  builtDoc_ = nullptr;
  builtStep_ = -1;
  // A trace whose header names a verify kind: the panes' owner brings this pane to the front.
  if (!trace_verify_kind(ctx.doc()->replay->header()).empty()) Q_EMIT speculativeTraceLoaded();
}

void VerifyPane::onStepChanged(TraceContext& ctx) {
  if (!ctx.loaded()) return;
  // The data is cheap (a walk over one record); the widgets are rebuilt only
  // when the pane is on screen (it is often a hidden tab).
  if (builtDoc_ == ctx.shownDoc() && builtStep_ == ctx.step()) return;
  info_ = verify_info(ctx.view(), *ctx.shownDoc()->replay);
  if (!info_.error.empty()) info_.error = ctx.shownDoc()->origin + ": " + info_.error;
  builtDoc_ = ctx.shownDoc();
  builtStep_ = ctx.step();
  dirty_ = true;
  if (onScreen_ && isVisible()) refresh();
}

void VerifyPane::setOnScreen(bool on) {
  onScreen_ = on;
  if (on && dirty_) refresh();
}

void VerifyPane::onSelectionChanged(TraceContext& ctx) { canvas_->setSelected(ctx.selectedNode()); }

void VerifyPane::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (dirty_) refresh();
}

void VerifyPane::ensureUpToDate() {
  if (dirty_) refresh();
}

QString VerifyPane::summaryText() const { return summary_->text(); }

QString VerifyPane::noRecordText() const {
  const int32_t step = ctx_.step();
  QString s = tr("Step %1 has no verification record: %2").arg(step).arg(ctx_.loaded() && !ctx_.view().phase.empty()
                                                                          ? tr("its phase is \"%1\".").arg(QString::fromStdString(ctx_.view().phase))
                                                                          : tr("not a speculative (draft/verify) step."));
  if (verifying_trace(ctx_)) s += tr(" Step to a <b>draft</b> or <b>verify</b> step of this trace.");
  return s;
}

void VerifyPane::refresh() {
  dirty_ = false;
  const VerifyInfo& I = info_;
  const VerifyKindSpec* spec = I.empty() ? nullptr : verify_kind_find(I.kind);
  QString s = spec ? QString::fromStdString(spec->summary(I)) : noRecordText();
  if (!I.error.empty()) s += tr("<br><span style='color:#c62828'>Malformed record: %1</span>").arg(QString::fromStdString(I.error).toHtmlEscaped());
  if (summary_->text() != s) summary_->setText(s);
  canvas_->setInfo(&info_, ctx_.loaded() ? ctx_.shownDoc()->replay.get() : nullptr);
  canvas_->setSelected(ctx_.selectedNode());
  const auto& extra = ctx_.loaded() ? ctx_.view().extra : nlohmann::json();
  nlohmann::json raw;
  if (extra.is_object())
    for (const char* k : {"verify", kDsbdDraftLayersField, "iteration"})
      if (extra.contains(k)) raw[k] = extra[k];
  model_->setJson(raw);
  raw_->expandToDepth(0);
  if (tabs_->isVisibleTo(this) == I.empty()) tabs_->setVisible(!I.empty());
  fillTable();
}

void VerifyPane::fillTable() {
  std::vector<std::pair<QString, VerifyChip>> rows;
  for (const VerifyLayer& L : info_.layers)
    for (const VerifyChip& c : L.chips) rows.emplace_back(L.extra ? tr("%1 (extra)").arg(L.layer) : QString::number(L.layer), c);
  for (size_t k = 0; k < info_.candidates.size(); ++k)
    for (size_t i = 0; i < info_.candidates[k].tokens.size(); ++i) {
      VerifyChip c;
      c.node = info_.candidates[k].nodes[i];
      c.token = info_.candidates[k].tokens[i];
      c.decision = c.node < 0 ? Decision::not_computed : i < static_cast<size_t>(info_.candidates[k].matched) ? Decision::accepted : Decision::rejected;
      rows.emplace_back(tr("cand %1").arg(k + 1), c);
    }
  table_->setRowCount(static_cast<int>(rows.size()));
  const TraceReplay* rp = ctx_.loaded() ? ctx_.shownDoc()->replay.get() : nullptr;
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const auto& [layer, c] = rows[static_cast<size_t>(r)];
    auto set = [&](int col, const QString& t) {
      auto* it = new QTableWidgetItem(t);
      if (col == 2) it->setData(Qt::UserRole, c.node);
      if (col == 4) it->setBackground(decision_color(c.decision));
      table_->setItem(r, col, it);
    };
    set(0, layer);
    set(1, c.beam >= 0 ? QString::number(c.beam) : QString());
    set(2, c.node >= 0 ? QString::number(c.node) : QStringLiteral("-"));
    set(3, rp && c.token >= 0 ? token_label(*rp, c.token, 20) : QString::number(c.token));
    set(4, QString::fromLatin1(decision_name(c.decision)));
    set(5, num(c.accept_prob, 4));
    set(6, num(c.u, 4));
    set(7, num(c.p, 4));
    set(8, num(c.q, 4));
    set(9, num(c.prob, 4));
  }
  table_->resizeColumnsToContents();
}

}  // namespace triescope::gui
