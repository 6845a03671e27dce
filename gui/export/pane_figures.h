// Figures of the panes that already paint with QPainter: a graphics scene
// (the trie), a widget's own paint (KV grid, charts, verification drawing,
// the whole window), and a one-line note for a pane with nothing to show.
// Rendering a widget through QSvgGenerator replays its paint calls, so the
// SVG keeps its text as text.
#pragma once
#include <QPointer>
#include <QWidget>

#include "gui/export/figure_source.h"

class QGraphicsScene;

namespace triescope::gui {

class SceneFigure final : public FigureSource {
 public:
  SceneFigure(QString name, QGraphicsScene* scene) : name_(std::move(name)), scene_(scene) {}
  QString figureName() const override { return name_; }
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

 private:
  QRectF source() const;
  QString name_;
  QGraphicsScene* scene_;
};

class WidgetFigure final : public FigureSource {
 public:
  WidgetFigure(QString name, QWidget* widget) : name_(std::move(name)), widget_(widget) {}
  QString figureName() const override { return name_; }
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

 private:
  QString name_;
  QPointer<QWidget> widget_;
};

// A pane that is its own FigureSource, borrowed for one export.
class FigureRef final : public FigureSource {
 public:
  explicit FigureRef(const FigureSource& f) : f_(f) {}
  QString figureName() const override { return f_.figureName(); }
  QSizeF figureSize() const override { return f_.figureSize(); }
  void paintFigure(QPainter& p) const override { f_.paintFigure(p); }

 private:
  const FigureSource& f_;
};

class NoteFigure final : public FigureSource {
 public:
  NoteFigure(QString name, QString text) : name_(std::move(name)), text_(std::move(text)) {}
  QString figureName() const override { return name_; }
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

 private:
  QString name_, text_;
};

}  // namespace triescope::gui
