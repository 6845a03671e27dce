// Verification pane (speculative traces): for DSBD and speculative decoding
// the draft layers with each draft's fate (accepted / rejected / untested /
// parent rejected / not verified), W_L^(l) per layer, the layer where
// verification stopped, acceptance probabilities and the beams sampled from
// the residual or the target; for lookahead the pending token, the Jacobi
// window, each pool candidate with the nodes that computed it and the
// accepted path. A drawing, a table of the same entries and the raw record.
// Built from core/analysis/verify_info.h (the records as written); the rows
// and the summary are the verify kind's (core/analysis/verify_kind.h).
#pragma once
#include <QWidget>

#include <set>

#include "gui/trace_context.h"
#include "core/analysis/verify_info.h"
#include "core/analysis/verify_kind.h"

class QLabel;
class QTabWidget;
class QTableWidget;
class QTreeView;
class QScrollArea;

namespace triescope::gui {

class JsonTreeModel;
class VerifyCanvas;

class VerifyPane final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  explicit VerifyPane(TraceContext& ctx, QWidget* parent = nullptr);

  // For tests.
  bool hasData() const { return !info_.empty(); }
  const VerifyInfo& info() const { return info_; }
  QString summaryText() const;
  JsonTreeModel* model() const { return model_; }
  QTableWidget* table() const { return table_; }
  VerifyCanvas* canvas() const { return canvas_; }
  // Rebuilds the drawing and the table now if the step changed while hidden.
  void ensureUpToDate();
  // Whether its dock tab is the shown one (QDockWidget::visibilityChanged):
  // a tabified dock's hidden pane still reports isVisible(), and updating
  // its labels re-laid out (and repainted) the whole window every step.
  void setOnScreen(bool on);

 Q_SIGNALS:
  // Emitted when a trace with verification records is loaded.
  void speculativeTraceLoaded();

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  void refresh();
  QString noRecordText() const;
  void fillTable();
  QLabel* summary_;
  QTabWidget* tabs_;
  QScrollArea* scroll_;
  VerifyCanvas* canvas_;
  QTableWidget* table_;
  QTreeView* raw_;
  JsonTreeModel* model_;
  VerifyInfo info_;
  bool dirty_ = true;
  bool onScreen_ = true;   // step changed while hidden: rebuilt when shown
  int32_t builtStep_ = -1;
  const void* builtDoc_ = nullptr;
};

// The drawing: one row per draft layer (or window / candidate row), a chip
// per draft. Clicking a chip selects its node everywhere.
class VerifyCanvas final : public QWidget {
  Q_OBJECT
 public:
  explicit VerifyCanvas(TraceContext& ctx, QWidget* parent = nullptr);
  void setInfo(const VerifyInfo* info, const TraceReplay* replay);
  void setSelected(int32_t node);
  QSize sizeHint() const override { return size_; }
  QSize minimumSizeHint() const override { return size_; }
  // Chips as drawn: node, decision, rectangle (widget coordinates).
  struct Chip {
    QRectF rect;
    VerifyChip c;
    QString line1, line2, tip;
  };
  const std::vector<Chip>& chips() const { return chips_; }
  int32_t nodeAt(QPointF p) const;

 protected:
  void paintEvent(QPaintEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  bool event(QEvent* e) override;

 private:
  struct Row {
    double y = 0;
    QString head1, head2, head3;
    QColor tag;
  };
  void relayout();
  Chip makeChip(const VerifyRowChip& rc, double x, double y) const;
  // Adds a row at height y and its chips; returns where its last chip ends.
  double addRow(const VerifyRow& row, double y, std::set<Decision>& used);
  void layoutLegend(double y, double maxX, const std::set<Decision>& used);
  TraceContext& ctx_;
  const VerifyInfo* info_ = nullptr;
  const TraceReplay* replay_ = nullptr;
  std::vector<Chip> chips_;
  std::vector<Row> rows_;
  std::vector<std::pair<Decision, QString>> legend_;
  double legendY_ = 0;
  int32_t selected_ = -1;
  QSize size_{200, 60};
};

QColor decision_color(Decision d);

}  // namespace triescope::gui
