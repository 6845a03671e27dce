// The attention mask of the shown step as a figure for slides: row labels
// "#node token p<position>", column labels "slot token", one rectangle per run
// of attended cells, the key positions under the grid. Vector throughout up
// to kMaxVectorCells cells a side; a bigger mask is drawn as an embedded image
// with tick labels (thousands of rectangles per row help no slide).
#pragma once
#include "gui/export/figure_source.h"
#include "gui/trace_context.h"

namespace triescope::gui {

class MaskFigure final : public FigureSource {
 public:
  static constexpr int kMaxVectorCells = 256;
  explicit MaskFigure(const TraceContext& ctx) : ctx_(ctx) {}
  QString figureName() const override { return QStringLiteral("mask"); }
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;
  bool vector() const;  // cells drawn as rectangles, not an image

 private:
  struct Geometry;
  Geometry geometry() const;
  QString title() const;
  void paintCells(QPainter& p, const Geometry& g) const;
  void paintRowLabels(QPainter& p, const Geometry& g) const;
  void paintColumnLabels(QPainter& p, const Geometry& g) const;
  void paintKeyPositions(QPainter& p, const Geometry& g) const;
  const TraceContext& ctx_;
};

}  // namespace triescope::gui
