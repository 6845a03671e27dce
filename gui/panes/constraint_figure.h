// The constraint view's drawing of one step (core/analysis/constraint_picture.h),
// laid out once per step and painted with QPainter calls only, so the pane,
// a PNG and an SVG export (text stays <text>) show the same figure: the
// prefix tree near the beams (STATIC Figure 1b, nodes named level letter +
// token as the paper names them, with their breadth-first state and the ids
// below), each beam's state on it, the CSR rows read at this step (Fig. 1d-e),
// the dense bit rows (App. A.1.2) and the beams after the step.
#pragma once
#include <QColor>
#include <QFont>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <vector>

#include "core/analysis/constraint_picture.h"

class QPainter;

namespace triescope::gui {

class ConstraintFigure {
 public:
  ConstraintFigure();
  // `lines`: heading lines drawn above the picture (what was loaded, notes).
  void set(ConstraintPicture picture, QStringList lines);
  const ConstraintPicture& picture() const { return pic_; }
  QSizeF size() const { return size_; }
  void paint(QPainter& p, int32_t selectedNode) const;
  // Trie node of the beam marker or beam cell under `pt`, -1 for none.
  int32_t nodeAt(QPointF pt) const;
  // Where tree node `i` (index into picture().tree) is drawn (tests).
  QRectF treeNodeRect(size_t i) const { return i < boxes_.size() ? boxes_[i] : QRectF(); }
  // The marker of `beam` on the tree (after: its state after the step), empty when not drawn.
  QRectF beamMarkerRect(int32_t beam, bool after) const;
  // Every text the figure draws, in order (tests read the figure through it).
  QStringList texts() const;

 private:
  struct Text {
    QRectF rect;
    QString text;
    int flags;
    bool bold = false;
    QColor color;
  };
  struct Hit {
    QRectF rect;
    int32_t node;
  };
  void layoutTree(double& y);
  void layoutMaskedTable(double& y);
  void layoutDenseTables(double& y);
  void layoutAfterTable(double& y);
  void paintTree(QPainter& p, int32_t selectedNode) const;
  void paintDense(QPainter& p) const;
  void addText(QRectF r, QString s, int flags = 0, bool bold = false, QColor c = QColor(30, 30, 30));
  double tableRow(double y, const std::vector<double>& widths, const QStringList& cells, bool bold);

  QFont font_, bold_;
  double lineH_ = 18;
  ConstraintPicture pic_;
  QStringList lines_;
  QSizeF size_;
  std::vector<Text> texts_;
  std::vector<QRectF> boxes_;                     // [tree] node boxes
  std::vector<std::pair<QRectF, int32_t>> more_;  // "+N more" boxes and their parent
  std::vector<Hit> hits_;
  struct Badge {
    QRectF rect;
    int32_t beam;
    bool after;
    int32_t node;
  };
  std::vector<Badge> badges_;
  struct DenseGrid {
    QPointF origin;
    const ConstraintBeam* beam;
  };
  std::vector<DenseGrid> grids_;
  double cell_ = 7;
  int gridRows_ = 0;
};

// A beam's colour, the same in the tree, the tables and the bit rows.
QColor constraint_beam_color(int32_t beam);

}  // namespace triescope::gui
