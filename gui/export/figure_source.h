// A pane that draws the current step as a figure for slides and scripts
// (`triescope-gui trace --step N --export-pane NAME --svg out.svg`).
// The figure is painted with QPainter calls only (no grabbed pixels), so the
// SVG export is vector output with text as <text> elements.
#pragma once
#include <QSizeF>
#include <QString>

class QPainter;

namespace triescope::gui {

class FigureSource {
 public:
  virtual ~FigureSource() = default;
  // The pane's name on the command line ("trie", "mask", ...).
  virtual QString figureName() const = 0;
  // The figure's natural size at scale 1 (SVG user units = pixels); never empty
  // (a pane with nothing to show draws a one-line note).
  virtual QSizeF figureSize() const = 0;
  // Paints the figure in [0, figureSize()] on `p` (already scaled by the caller).
  virtual void paintFigure(QPainter& p) const = 0;
};

}  // namespace triescope::gui
