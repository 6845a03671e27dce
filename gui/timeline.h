// Timeline: step slider, first/previous/next/last, play/pause with speed,
// jump-to-step box.
#pragma once
#include <QWidget>

#include "gui/trace_context.h"

class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;
class QTimer;
class QToolButton;

namespace triescope::gui {

class Timeline final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  explicit Timeline(TraceContext& ctx, QWidget* parent = nullptr);
  bool playing() const;
  QSlider* slider() const { return slider_; }

 public Q_SLOTS:
  void next();
  void prev();
  void first();
  void last();
  void togglePlay();
  void focusJump();

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  QSlider* slider_;
  QSpinBox* jump_;
  QComboBox* speed_;
  QToolButton* play_;
  class StatusText* label_;
  QTimer* timer_;
  bool updating_ = false;
};

}  // namespace triescope::gui
