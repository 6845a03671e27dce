#include "gui/panes/diff_pane.h"

#include <QButtonGroup>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

namespace triescope::gui {

DiffPane::DiffPane(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  summary_ = new QLabel(tr("Open two traces (File > Open diff, or triescope-gui --diff a.jsonl b.jsonl)."), this);
  summary_->setWordWrap(true);
  stepInfo_ = new QLabel(this);
  stepInfo_->setWordWrap(true);
  showA_ = new QRadioButton(tr("show A"), this);
  showB_ = new QRadioButton(tr("show B"), this);
  showA_->setChecked(true);
  auto* grp = new QButtonGroup(this);
  grp->addButton(showA_, 0);
  grp->addButton(showB_, 1);
  connect(grp, &QButtonGroup::idClicked, this, [this](int id) { ctx_.setShownSide(id == 1 ? TraceContext::B : TraceContext::A); });
  auto* prev = new QPushButton(tr("\u25c0 previous"), this);
  auto* next = new QPushButton(tr("next divergence \u25b6"), this);
  connect(prev, &QPushButton::clicked, this, &DiffPane::prevDivergence);
  connect(next, &QPushButton::clicked, this, &DiffPane::nextDivergence);
  list_ = new QListWidget(this);
  list_->setWordWrap(true);
  connect(list_, &QListWidget::itemActivated, this, [this](QListWidgetItem* it) { ctx_.setStep(it->data(Qt::UserRole).toInt()); });
  connect(list_, &QListWidget::itemClicked, this, [this](QListWidgetItem* it) { ctx_.setStep(it->data(Qt::UserRole).toInt()); });
  auto* row = new QHBoxLayout;
  row->addWidget(showA_);
  row->addWidget(showB_);
  row->addStretch(1);
  row->addWidget(prev);
  row->addWidget(next);
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(2, 2, 2, 2);
  l->addWidget(summary_);
  l->addLayout(row);
  l->addWidget(stepInfo_);
  l->addWidget(list_, 1);
  watchContext();
  setEnabled(false);
}

void DiffPane::onTraceLoaded(TraceContext& ctx) {
  list_->clear();
  setEnabled(ctx.diffMode());
  showA_->setChecked(true);
  if (!ctx.diffMode()) {
    summary_->setText(tr("Not in diff mode. Open two traces (File > Open diff, or --diff a.jsonl b.jsonl)."));
    return;
  }
  const auto& d = ctx.divergences();
  summary_->setText(tr("A = %1\nB = %2\n%3")
                        .arg(QFileInfo(QString::fromStdString(ctx.doc(TraceContext::A)->origin)).fileName(),
                             QFileInfo(QString::fromStdString(ctx.doc(TraceContext::B)->origin)).fileName(),
                             d.empty() ? tr("identical (structure exact, floats within 1e-6)")
                                       : tr("%1 divergences; first: %2").arg(d.size()).arg(QString::fromStdString(d.front().describe()))));
  const size_t shown = std::min<size_t>(d.size(), 5000);
  for (size_t i = 0; i < shown; ++i) {
    auto* it = new QListWidgetItem(QString::fromStdString(d[i].describe()).replace(QStringLiteral("first divergence at "), QString()), list_);
    it->setData(Qt::UserRole, static_cast<int>(d[i].step));
  }
}

void DiffPane::onStepChanged(TraceContext& ctx) {
  if (!ctx.diffMode()) return;
  showA_->setChecked(ctx.shownSide() == TraceContext::A);
  showB_->setChecked(ctx.shownSide() == TraceContext::B);
  const StepMarks& m = ctx.marks();
  stepInfo_->setText(m.empty() ? tr("step %1: A and B agree").arg(ctx.step())
                               : tr("step %1: %2 divergences (%3 mask cells, %4 nodes, %5 slots marked)")
                                     .arg(ctx.step())
                                     .arg(m.divergences.size())
                                     .arg(m.mask_cells.size())
                                     .arg(m.nodes.size())
                                     .arg(m.kv_slots.size()));
}

void DiffPane::nextDivergence() {
  const int32_t s = ctx_.nextDivergenceStep();
  if (s >= 0) ctx_.setStep(s);
}

void DiffPane::prevDivergence() {
  const int32_t s = ctx_.prevDivergenceStep();
  if (s >= 0) ctx_.setStep(s);
}

}  // namespace triescope::gui
