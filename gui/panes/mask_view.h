// Attention-mask pane: the mask the backend recorded for this step's forward
// pass (rows = query nodes, columns = KV slots) as a zoomable bitmap, token
// labels on both axes when zoomed in, the position-id strip under it, hover
// tooltip with the reason a cell is allowed or not (core's
// mask_cell_explain), a click pins it in the line under the mask and
// highlights the cell's tree path and slots (TraceContext::highlight); cells
// `check` faults are marked with the rule they break.
#pragma once
#include <QImage>
#include <QAbstractScrollArea>

#include <cstdint>
#include <set>
#include <vector>

#include "core/analysis/mask_cell_explain.h"
#include "gui/trace_context.h"

class QLabel;

namespace triescope::gui {

class MaskView final : public QAbstractScrollArea, public ContextViewer {
  Q_OBJECT
 public:
  explicit MaskView(TraceContext& ctx, QWidget* parent = nullptr);

  double cellSize() const { return cw_; }
  double cellHeight() const { return ch_; }
  void setCellSize(double px);  // zoom: square cells of px pixels
  void zoomBy(double factor);   // keeps the aspect fit() chose
  void fit();                   // whole mask in the viewport
  // Viewport coordinates of a cell's centre / the cell under a point ((-1,-1) if none).
  QPoint cellCenter(int row, int col) const;
  QPair<int, int> cellAt(QPoint viewportPos) const;
  QString cellExplanation(int row, int col) const;  // the hover tooltip text
  // Why cell (row, col) of the shown pass is set or not: core's
  // mask_cell_explain, one row's check (O(columns + depth)), done per
  // hovered or clicked cell only.
  MaskCellExplanation explain(int row, int col) const;
  // What a click on a cell does besides selecting its query: the
  // explanation in the line under the mask, the cell's path and slots
  // highlighted in the other panes. (-1, -1) unpins.
  void pinCell(int row, int col);
  QString pinnedText() const;
  // mask_check's faults at the shown step, found once per step: cells, and
  // rows with a wrong position id or slot. Skipped for a mask above
  // kMaxCheckedCells (then hovering a cell still checks its row).
  const std::set<std::pair<int32_t, int32_t>>& faultCells() const { return faultCells_; }
  const std::set<int32_t>& faultRows() const { return faultRows_; }
  bool faultMarksSkipped() const { return faultsSkipped_; }
  static constexpr int64_t kMaxCheckedCells = int64_t{1} << 20;
  QRect gridRect() const;
  // Renders the whole mask (not only the visible part) for export.
  QImage renderFull(double cellPx) const;

 protected:
  void paintEvent(QPaintEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void leaveEvent(QEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  bool viewportEvent(QEvent* e) override;

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  void onHighlightChanged(TraceContext& ctx) override;
  void updateScrollBars();
  void paintTo(QPainter& p, QRect area, int scrollX, int scrollY) const;
  struct Frame;
  void paintNoPass(QPainter& p, QRect area) const;
  void paintBitmap(QPainter& p, const Frame& fr) const;
  void paintMarks(QPainter& p, const Frame& fr) const;  // selection frames, diff marks
  void paintRowLabels(QPainter& p, const Frame& fr) const;
  void paintColumnLabels(QPainter& p, const Frame& fr) const;
  void paintPositionStrip(QPainter& p, const Frame& fr) const;
  void paintLegend(QPainter& p, const Frame& fr) const;
  void paintFaults(QPainter& p, const Frame& fr) const;
  MaskCellSource cellSource() const;
  MaskCellHighlight highlightOf(const MaskCellExplanation& e) const;
  void hoverCell(int row, int col);
  void computeFaults();
  void showPinned();
  int rows() const;
  int cols() const;
  int leftMargin() const;
  int topMargin() const;
  static constexpr int kBottom = 30;  // position-id strip height

  double cw_ = 16, ch_ = 16;  // cell width and height in pixels (fit() may make them differ)
  bool fitPending_ = true;
  int hoverRow_ = -1, hoverCol_ = -1;
  int pinnedRow_ = -1, pinnedCol_ = -1;
  QLabel* explainLabel_ = nullptr;       // the line under the mask
  static constexpr int kExplainHeight = 34;
  // The batch layout's copies at the shown step (batch_copy_tokens), made
  // on the first explained cell of a step.
  mutable std::vector<std::vector<int32_t>> copyTokens_;
  mutable const void* copyTokensOf_ = nullptr;
  mutable int32_t copyTokensStep_ = -1;
  std::set<std::pair<int32_t, int32_t>> faultCells_;
  std::set<int32_t> faultRows_;
  int64_t faultCount_ = 0;
  bool faultsSkipped_ = false;
  // What the last painted step showed: a step whose pass and column layout
  // are identical (same queries, positions, slots, bits, slot owners) needs
  // no repaint (docs/benchmarks-gui.md).
  struct Shown {
    std::vector<int32_t> queries, positions, slots, owners;
    std::vector<uint64_t> words;
    int rows = -1, cols = -1;
    bool draftNote = false;
    bool operator==(const Shown& o) const {
      return rows == o.rows && draftNote == o.draftNote && cols == o.cols && queries == o.queries && positions == o.positions && slots == o.slots &&
             owners == o.owners && words == o.words;
    }
  };
  Shown shown_;
  std::vector<int32_t> owners_;  // scratch
  // The sampled bitmap and its column tables, kept between paints: a fresh
  // ~1 MB image per paint was ~200 page faults, 2-3 ms of each step's paint
  // here (docs/benchmarks-gui.md). Reallocated only when the size changes.
  mutable QImage bitmap_;
  mutable std::vector<int32_t> colOf_;
  mutable std::vector<char> colEdge_;
  bool sameAsShown();
};

}  // namespace triescope::gui
