// Diff mode: the divergences trace_diff_all found (the function `triescope
// diff` uses), which trace the panes show, next/previous divergence.
#pragma once
#include <QWidget>

#include "gui/trace_context.h"

class QLabel;
class QListWidget;
class QRadioButton;

namespace triescope::gui {

class DiffPane final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  explicit DiffPane(TraceContext& ctx, QWidget* parent = nullptr);
  QListWidget* list() const { return list_; }

 public Q_SLOTS:
  void nextDivergence();
  void prevDivergence();

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  QLabel* summary_;
  QLabel* stepInfo_;
  QListWidget* list_;
  QRadioButton *showA_, *showB_;
};

}  // namespace triescope::gui
