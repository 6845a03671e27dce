// The narration pane: the current step told in a few plain sentences
// (core/analysis/step_narration.h), with every node it names a link that
// selects the node everywhere. Also a figure ("narration") for export.
#pragma once
#include <QWidget>

#include <cstdint>
#include <list>
#include <utility>
#include <vector>

#include "core/analysis/step_narration.h"
#include "gui/export/figure_source.h"
#include "gui/trace_context.h"

class QTextBrowser;
class QTextDocument;
class QTimer;
class QUrl;

namespace triescope::gui {

class NarrationPane final : public QWidget, public ContextViewer, public FigureSource {
  Q_OBJECT
 public:
  explicit NarrationPane(TraceContext& ctx, QWidget* parent = nullptr);

  QString figureName() const override { return QStringLiteral("narration"); }
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

  const std::vector<NarrationSentence>& sentences() const { return sentences_; }
  QTextBrowser* browser() const { return browser_; }
  // The anchor a node's name links to ("node:7").
  static QString nodeHref(int32_t node);

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  void linkClicked(const QUrl& url);
  void render();
  QString html(int32_t selected, bool links) const;
  void figureDocument(QTextDocument& d) const;  // the sentences laid out at the figure's width
  // The tree as the shown step found it: kept from the steps narrated before
  // (stepping forward costs no replay), else replayed at once when that is
  // cheap, or after the user rests on the step (deferred_): null meanwhile.
  const TreeBefore* beforeOf(const StepView& view, const TraceReplay& replay);
  void replayDeferred();

  QTextBrowser* browser_;
  std::vector<NarrationSentence> sentences_;
  QString error_;
  const void* doc_ = nullptr;  // the document the kept trees belong to
  // The trees after the last few narrated steps (step -> tree), newest first:
  // a step back after steps forward finds its previous step here.
  std::list<TreeBefore> kept_;
  static constexpr size_t kKeptTrees = 8;
  // A replay too big to run on every key press (a step back through a big
  // streamed trace) waits until no step came for a moment.
  QTimer* deferred_;
  int32_t deferredStep_ = -1;  // the step whose tree it will replay, -1: none
};

}  // namespace triescope::gui
