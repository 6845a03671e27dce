#include "gui/panes/beams_pane.h"

#include <QHeaderView>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/chosen_beams_model.h"

namespace triescope::gui {

BeamsPane::BeamsPane(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  table_ = new QTableView(this);
  model_ = new ChosenBeamsModel(this);
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (updating_ || !cur.isValid()) return;
    ctx_.selectNode(model_->data(cur, ChosenBeamsModel::NodeIdRole).toInt());
  });
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(2, 2, 2, 2);
  l->addWidget(table_);
  watchContext();
}

void BeamsPane::onStepChanged(TraceContext& ctx) {
  updating_ = true;
  model_->setStep(ctx.view(), ctx.shownDoc() ? ctx.shownDoc()->replay.get() : nullptr);
  table_->resizeColumnsToContents();
  updating_ = false;
  onSelectionChanged(ctx);
}

void BeamsPane::onSelectionChanged(TraceContext& ctx) {
  updating_ = true;
  const int r = model_->rowOfNode(ctx.selectedNode());
  if (r >= 0) table_->selectRow(r);
  else table_->clearSelection();
  updating_ = false;
}

}  // namespace triescope::gui
