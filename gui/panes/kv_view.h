// KV-cache pane: the flat slot array as a grid, each slot coloured by the
// branch of the node it holds (grey: shared prefix, white: free), trie vs
// batch-baseline counts, and on a GC step the compaction moves old -> new.
#pragma once
#include <QWidget>

#include "gui/trace_context.h"

class QPainter;

namespace triescope::gui {

class KvView final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  explicit KvView(TraceContext& ctx, QWidget* parent = nullptr);

  QRect slotRect(int slot) const;       // after-GC (current) grid, widget coordinates
  QRect oldSlotRect(int slot) const;    // before-GC grid, only on GC steps
  int slotAt(QPoint p) const;
  QSize sizeHint() const override;
  QString headerText() const;
  // Where the highlighted mask cell's slots are drawn (TraceContext::highlight):
  // key first, then the query's, in the grid of the layout the pass read (the
  // pre-GC grid when the step compacted after its pass); empty when not shown.
  std::vector<std::pair<int, QRect>> highlightedSlots() const;

 protected:
  void paintEvent(QPaintEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  bool event(QEvent* e) override;

 private:
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  void onHighlightChanged(TraceContext& ctx) override;
  void relayout();
  struct SlotPainter;
  void paintLegend(QPainter& p) const;  // header text and colour legend
  void paintBeforeGc(QPainter& p, const SlotPainter& slot) const;
  void paintGcMoves(QPainter& p) const;
  void paintHighlight(QPainter& p) const;
  std::vector<int32_t> branch_;  // [nodes]
  int cell_ = 30, perRow_ = 32, slots_ = 0, oldSlots_ = 0;
  int gridTop_ = 0, oldTop_ = -1;
  static constexpr int kHeader = 44;
};

}  // namespace triescope::gui
