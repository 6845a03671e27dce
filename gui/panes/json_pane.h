// Constraint and verification panes: the step record's algorithm-specific
// field ("constraint", "verify") as an expandable tree, or a note when the
// trace does not carry it.
#pragma once
#include <QWidget>

#include "gui/trace_context.h"

class QLabel;
class QTreeView;

namespace triescope::gui {

class JsonTreeModel;

class JsonPane final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  JsonPane(TraceContext& ctx, QString key, QString absentNote, QWidget* parent = nullptr);
  // Brings the model up to date if the pane was hidden at the last step.
  JsonTreeModel* model() {
    if (widgetsStale_) updateWidgets();
    return model_;
  }
  bool hasData() const { return has_; }
  // Some step record of the loaded trace carries the key.
  bool traceHasData() const { return traceHas_; }
  // A read-only tree over `model` as this pane draws one (alternating rows,
  // the key column fitted); the verification pane's raw record uses it too.
  static QTreeView* treeView(JsonTreeModel* model, QWidget* parent);
  // See VerifyPane::setOnScreen.
  void setOnScreen(bool on) {
    onScreen_ = on;
    if (on && widgetsStale_) updateWidgets();
  }

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  QString key_, absent_;
  QLabel* note_;
  QTreeView* tree_;
  JsonTreeModel* model_;
  bool has_ = false;
  bool traceHas_ = false;
  bool widgetsStale_ = false;
  bool onScreen_ = true;
  void updateWidgets();

 protected:
  void showEvent(QShowEvent* e) override;
};

}  // namespace triescope::gui
