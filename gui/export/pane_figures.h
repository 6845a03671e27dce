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

// A figure under the name its builder gives it.
class NamedFigure : public FigureSource {
 public:
  QString figureName() const override { return name_; }

 protected:
  explicit NamedFigure(QString name) : name_(std::move(name)) {}

 private:
  QString name_;
};

class SceneFigure final : public NamedFigure {
 public:
  SceneFigure(QString name, QGraphicsScene* scene) : NamedFigure(std::move(name)), scene_(scene) {}
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

 private:
  QRectF source() const;
  QGraphicsScene* scene_;
};

class WidgetFigure final : public NamedFigure {
 public:
  WidgetFigure(QString name, QWidget* widget) : NamedFigure(std::move(name)), widget_(widget) {}
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

 private:
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

class NoteFigure final : public NamedFigure {
 public:
  NoteFigure(QString name, QString text) : NamedFigure(std::move(name)), text_(std::move(text)) {}
  QSizeF figureSize() const override;
  void paintFigure(QPainter& p) const override;

 private:
  QString text_;
};

}  // namespace triescope::gui
