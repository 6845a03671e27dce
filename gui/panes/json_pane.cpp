#include "gui/panes/json_pane.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeView>
#include <QVBoxLayout>

#include "gui/json_tree_model.h"

namespace triescope::gui {

JsonPane::JsonPane(TraceContext& ctx, QString key, QString absentNote, QWidget* parent)
    : QWidget(parent), ContextViewer(ctx), key_(std::move(key)), absent_(std::move(absentNote)) {
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  model_ = new JsonTreeModel(this);
  tree_ = treeView(model_, this);
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(2, 2, 2, 2);
  l->addWidget(note_);
  l->addWidget(tree_, 1);
  watchContext();
}

QTreeView* JsonPane::treeView(JsonTreeModel* model, QWidget* parent) {
  auto* tree = new QTreeView(parent);
  tree->setModel(model);
  tree->setAlternatingRowColors(true);
  tree->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  return tree;
}

void JsonPane::onTraceLoaded(TraceContext& ctx) {
  traceHas_ = ctx.doc()->step_fields.count(key_.toStdString()) > 0;
}

void JsonPane::onStepChanged(TraceContext& ctx) {
  const auto& extra = ctx.view().extra;
  const std::string k = key_.toStdString();
  has_ = extra.is_object() && extra.contains(k);
  widgetsStale_ = true;
  // A new label text re-lays out the main window (a full-window repaint per
  // step, docs/benchmarks-gui.md): hidden tabs catch up when shown.
  if (onScreen_ && isVisible()) updateWidgets();
}

void JsonPane::updateWidgets() {
  widgetsStale_ = false;
  if (!ctx_.loaded()) return;
  const auto& extra = ctx_.view().extra;
  model_->setJson(has_ ? extra[key_.toStdString()] : nlohmann::json());
  if (tree_->isVisibleTo(this) != has_) tree_->setVisible(has_);
  note_->setText(has_ ? tr("step %1: \"%2\" as recorded").arg(ctx_.step()).arg(key_) : absent_.arg(ctx_.step()));
  if (has_) tree_->expandToDepth(1);
}

void JsonPane::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (widgetsStale_) updateWidgets();
}

}  // namespace triescope::gui
