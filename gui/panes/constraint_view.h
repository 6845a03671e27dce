// The constraint view (STATIC traces): the constraint set's prefix tree near
// the live beams, each beam's state on it, the CSR row of that state, the
// dense bit rows and the tokens kept from each beam (ConstraintFigure over
// core's ConstraintPicture), with the step record's raw `constraint` field in
// a second tab. The set named by the trace header is found next to the trace
// (or the live run's sample, or a file the user picks), checked against the
// header and indexed off the UI thread; until then, or when it is missing or
// changed, the view says so and shows what the records alone say.
#pragma once
#include <QFutureWatcher>
#include <QWidget>

#include <optional>

#include "core/analysis/constraint_source.h"
#include "gui/export/figure_source.h"
#include "gui/panes/constraint_figure.h"
#include "gui/trace_context.h"

class QLabel;
class QPushButton;
class QScrollArea;
class QTabWidget;

namespace triescope::gui {

class JsonPane;
class ConstraintCanvas;

class ConstraintView final : public QWidget, public ContextViewer, public FigureSource {
  Q_OBJECT
 public:
  explicit ConstraintView(TraceContext& ctx, QWidget* parent = nullptr);
  ~ConstraintView() override;

  // The raw record tab (the step record's `constraint` field as a tree).
  JsonPane* rawPane() const { return raw_; }
  bool hasData() const;
  bool traceHasData() const;
  // Hidden dock tabs skip their widget updates until shown (VerifyPane::setOnScreen).
  void setOnScreen(bool on);

  // Reads the set from `path` instead of the one found next to the trace.
  void chooseConstraintFile(const QString& path);
  bool loadingIndex() const { return watcher_.isRunning(); }
  // What the last load said (what was read, or why nothing: file and field).
  QString loadMessage() const { return loadMessage_; }
  bool indexed() const { return index_ != nullptr; }
  const ConstraintFigure& figure() const;  // brought up to date first
  // The drawing's widget (tests click it).
  QWidget* canvasWidget() const;
  // Milliseconds the last step's picture took (core picture + layout).
  double lastStepMs() const { return lastStepMs_; }

  QString figureName() const override { return QStringLiteral("constraint"); }
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

 Q_SIGNALS:
  // The set was read (or found missing / changed): loadMessage() says which.
  void indexLoaded();

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  void startLoad(const std::vector<std::string>& candidates);
  void rebuild() const;
  QStringList headingLines() const;

  QLabel* note_;
  QPushButton* choose_;
  QTabWidget* tabs_;
  QScrollArea* scroll_;
  ConstraintCanvas* canvas_;
  JsonPane* raw_;
  std::optional<ConstraintHeader> header_;
  QString headerError_;
  std::shared_ptr<const ConstraintIndexLoaded> index_;
  QString loadMessage_;
  QFutureWatcher<ConstraintLoadResult> watcher_;
  uint64_t loadGeneration_ = 0, pendingGeneration_ = 0;
  std::string loadedKey_;  // sha256 + path of index_, so a reload of the same trace keeps it
  mutable ConstraintFigure figure_;
  mutable bool stale_ = true;
  bool onScreen_ = true;
  mutable double lastStepMs_ = 0;
};

}  // namespace triescope::gui
