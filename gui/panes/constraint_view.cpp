#include "gui/panes/constraint_view.h"

#include <QElapsedTimer>
#include <QFileDialog>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "core/common/error.h"
#include "gui/panes/json_pane.h"
#include "gui/start_page.h"

namespace triescope::gui {

// The figure at its natural size inside the scroll area; a click on a beam
// marker or a beam cell selects that beam's node everywhere.
class ConstraintCanvas final : public QWidget {
 public:
  ConstraintCanvas(ConstraintView& view, TraceContext& ctx, QWidget* parent) : QWidget(parent), view_(view), ctx_(ctx) {
    setAttribute(Qt::WA_OpaquePaintEvent);
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    view_.paintFigure(p);
  }
  void mousePressEvent(QMouseEvent* e) override {
    const int32_t node = view_.figure().nodeAt(e->position());
    if (node >= 0) ctx_.selectNode(node);
  }

 private:
  ConstraintView& view_;
  TraceContext& ctx_;
};

ConstraintView::ConstraintView(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  choose_ = new QPushButton(tr("Constraint file..."), this);
  choose_->setToolTip(tr("Read the constraint set from another file (checked against the trace header's sha256 and item count)"));
  connect(choose_, &QPushButton::clicked, this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, tr("Constraint set"), QString(), tr("Constraint sets (*.npy *.txt);;All files (*)"));
    if (!p.isEmpty()) chooseConstraintFile(p);
  });
  tabs_ = new QTabWidget(this);
  scroll_ = new QScrollArea(tabs_);
  canvas_ = new ConstraintCanvas(*this, ctx_, scroll_);
  scroll_->setWidget(canvas_);
  scroll_->setWidgetResizable(false);
  scroll_->setBackgroundRole(QPalette::Base);
  raw_ = new JsonPane(ctx_, QStringLiteral("constraint"),
                      tr("Step %1 has no \"constraint\" record: this trace was decoded without a logits constraint, or this step masked nothing."),
                      tabs_);
  tabs_->addTab(scroll_, tr("Picture"));
  tabs_->addTab(raw_, tr("Raw record"));
  tabs_->setCornerWidget(choose_, Qt::TopRightCorner);
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(2, 2, 2, 2);
  l->addWidget(note_);
  l->addWidget(tabs_, 1);
  connect(&watcher_, &QFutureWatcher<ConstraintLoadResult>::finished, this, [this] {
    if (pendingGeneration_ != loadGeneration_) return;
    const ConstraintLoadResult r = watcher_.result();
    index_ = r.index;
    loadMessage_ = QString::fromStdString(r.message);
    // The figure says what was loaded; the line above it only what went wrong.
    note_->setText(index_ ? QString() : loadMessage_);
    note_->setVisible(!index_);
    stale_ = true;
    if (onScreen_ && isVisible()) {
      rebuild();
      canvas_->update();
    }
    Q_EMIT indexLoaded();
  });
  note_->setText(tr("Open a constrained (STATIC) trace to see its constraint set."));
  watchContext();
}

ConstraintView::~ConstraintView() {
  watcher_.waitForFinished();
}

QWidget* ConstraintView::canvasWidget() const { return canvas_; }
bool ConstraintView::hasData() const { return raw_->hasData(); }
bool ConstraintView::traceHasData() const { return raw_->traceHasData(); }

void ConstraintView::onTraceLoaded(TraceContext& ctx) {
  stale_ = true;
  headerError_.clear();
  header_.reset();
  const TraceDocument* doc = ctx.doc();
  try {
    header_ = constraint_header_read(doc->replay->header_record(), doc->origin);
  } catch (const Error& e) {
    headerError_ = QString::fromUtf8(e.what());
  }
  if (!header_) {
    index_.reset();
    loadedKey_.clear();
    ++loadGeneration_;
    loadMessage_ = headerError_.isEmpty() ? tr("This trace's header has no config.constraint: it was decoded without a constraint set.")
                                          : headerError_;
    note_->setText(loadMessage_);
    note_->setVisible(true);
    return;
  }
  // Next to the trace, then in the bundled samples folder (a bundled sample's trace written elsewhere).
  const auto candidates = constraint_file_candidates(*header_, doc->origin, "", {samples_dir().toStdString()});
  const std::string key = header_->set_sha256 + "|" + (candidates.empty() ? std::string() : candidates.front());
  if (index_ && key == loadedKey_) return;  // the same set (a preview replaced by the full file)
  index_.reset();
  loadedKey_ = key;
  startLoad(candidates);
}

void ConstraintView::chooseConstraintFile(const QString& path) {
  if (!header_) return;
  index_.reset();
  stale_ = true;
  loadedKey_ = header_->set_sha256 + "|" + path.toStdString();
  startLoad(constraint_file_candidates(*header_, "", path.toStdString()));
}

void ConstraintView::startLoad(const std::vector<std::string>& candidates) {
  pendingGeneration_ = ++loadGeneration_;
  loadMessage_ = tr("reading the constraint set %1 ...").arg(QString::fromStdString(candidates.empty() ? header_->set_file : candidates.front()));
  note_->setText(loadMessage_);
  note_->setVisible(true);
  // A set of a million ids takes a second or more to read and index: never on the UI thread.
  watcher_.setFuture(QtConcurrent::run([h = *header_, candidates]() { return constraint_index_load(h, candidates); }));
}

void ConstraintView::onStepChanged(TraceContext&) {
  stale_ = true;
  if (onScreen_ && isVisible()) {
    rebuild();
    canvas_->update();
  }
}

void ConstraintView::onSelectionChanged(TraceContext&) {
  if (isVisible()) canvas_->update();
}

void ConstraintView::setOnScreen(bool on) {
  onScreen_ = on;
  if (on && stale_ && isVisible()) {
    rebuild();
    canvas_->update();
  }
}

void ConstraintView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (stale_) {
    rebuild();
    canvas_->update();
  }
}

QStringList ConstraintView::headingLines() const {
  QStringList out;
  if (!header_) {
    out << loadMessage_;
    return out;
  }
  const ConstraintHeader& h = *header_;
  out << tr("%1: impl %2, %3 layout, d = %4 dense levels, L = %5, |V| = %6%7%8")
             .arg(QString::fromStdString(h.name), QString::fromStdString(h.impl), QString::fromLatin1(csr_layout_name(h.layout)))
             .arg(h.dense_levels)
             .arg(h.length)
             .arg(h.vocab_size)
             .arg(h.states >= 0 ? tr(", %1 states").arg(h.states) : QString())
             .arg(h.set_items >= 0 ? tr(", |C| = %1 ids").arg(h.set_items) : QString());
  out << loadMessage_;
  if (!h.states_are_csr()) out << tr("impl %1 records its own states: the states drawn are the CSR index's").arg(QString::fromStdString(h.impl));
  return out;
}

void ConstraintView::rebuild() const {
  stale_ = false;
  QElapsedTimer t;
  t.start();
  if (!ctx_.loaded()) return;
  const TraceDocument* doc = ctx_.shownDoc();
  ConstraintPicture pic;
  if (header_) pic = constraint_picture_at(ctx_.view(), *doc->replay, *header_, index_.get(), doc->prompt_len);
  else if (ctx_.view().extra.is_object() && ctx_.view().extra.contains("constraint"))
    pic = constraint_picture_at(ctx_.view(), *doc->replay, ConstraintHeader{}, nullptr, doc->prompt_len);
  pic.step = ctx_.step();
  QStringList lines = headingLines();
  const QString step = tr("Step %1%2").arg(ctx_.step()).arg(pic.has_record ? QString() : tr(" (no \"constraint\" record)"));
  if (lines.isEmpty()) lines << step;
  else lines[0] = step + QStringLiteral(" · ") + lines[0];
  figure_.set(std::move(pic), lines);
  const QSize s = figure_.size().toSize();
  if (canvas_->size() != s) canvas_->resize(s);
  lastStepMs_ = static_cast<double>(t.nsecsElapsed()) / 1e6;
}

const ConstraintFigure& ConstraintView::figure() const {
  if (stale_) rebuild();
  return figure_;
}

QSizeF ConstraintView::figureSize() const {
  const QSizeF s = figure().size();
  return s.isEmpty() ? QSizeF(420, 40) : s;
}

void ConstraintView::paintFigure(QPainter& p) const { figure().paint(p, ctx_.selectedNode()); }

}  // namespace triescope::gui
