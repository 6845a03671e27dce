// The beams chosen at this step, a table linked to the selection.
#pragma once
#include <QWidget>

#include "gui/trace_context.h"

class QTableView;

namespace triescope::gui {

class ChosenBeamsModel;

class BeamsPane final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  explicit BeamsPane(TraceContext& ctx, QWidget* parent = nullptr);
  ChosenBeamsModel* model() const { return model_; }
  QTableView* table() const { return table_; }

 private:
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  QTableView* table_;
  ChosenBeamsModel* model_;
  bool updating_ = false;
};

}  // namespace triescope::gui
