#include "gui/timeline.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QStyle>
#include <QTimer>
#include <QToolButton>

#include "gui/widgets/status_text.h"

namespace triescope::gui {

Timeline::Timeline(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  auto btn = [this](QStyle::StandardPixmap icon, const QString& tip, auto slot) {
    auto* b = new QToolButton(this);
    b->setIcon(style()->standardIcon(icon));
    b->setToolTip(tip);
    connect(b, &QToolButton::clicked, this, slot);
    return b;
  };
  auto* l = new QHBoxLayout(this);
  l->setContentsMargins(4, 2, 4, 2);
  l->addWidget(btn(QStyle::SP_MediaSkipBackward, tr("first step (Home)"), &Timeline::first));
  l->addWidget(btn(QStyle::SP_MediaSeekBackward, tr("previous step (Left)"), &Timeline::prev));
  play_ = btn(QStyle::SP_MediaPlay, tr("play / pause (Space)"), &Timeline::togglePlay);
  l->addWidget(play_);
  l->addWidget(btn(QStyle::SP_MediaSeekForward, tr("next step (Right)"), &Timeline::next));
  l->addWidget(btn(QStyle::SP_MediaSkipForward, tr("last step (End)"), &Timeline::last));
  speed_ = new QComboBox(this);
  for (const char* s : {"1 step/s", "4 steps/s", "10 steps/s", "30 steps/s"}) speed_->addItem(QString::fromLatin1(s));
  speed_->setCurrentIndex(1);
  speed_->setToolTip(tr("playback speed"));
  l->addWidget(speed_);
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setTracking(true);
  l->addWidget(slider_, 1);
  jump_ = new QSpinBox(this);
  jump_->setPrefix(tr("step "));
  jump_->setToolTip(tr("jump to step (Ctrl+G)"));
  jump_->setKeyboardTracking(false);
  l->addWidget(jump_);
  label_ = new StatusText(this, 150);
  label_->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  l->addWidget(label_);
  timer_ = new QTimer(this);
  connect(timer_, &QTimer::timeout, this, [this] {
    if (ctx_.stepIndex() + 1 >= static_cast<int32_t>(ctx_.steps().size())) togglePlay();
    else next();
  });
  connect(speed_, &QComboBox::currentIndexChanged, this, [this](int i) {
    static const int ms[] = {1000, 250, 100, 33};
    timer_->setInterval(ms[std::clamp(i, 0, 3)]);
  });
  timer_->setInterval(250);
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (!updating_) ctx_.setStepIndex(v);
  });
  connect(jump_, &QSpinBox::valueChanged, this, [this](int v) {
    if (!updating_) ctx_.setStep(v);
  });
  watchContext();
  setEnabled(false);
}

void Timeline::onTraceLoaded(TraceContext& ctx) {
  updating_ = true;
  setEnabled(!ctx.steps().empty());
  slider_->setRange(0, std::max<int>(0, static_cast<int>(ctx.steps().size()) - 1));
  slider_->setPageStep(std::max<int>(1, static_cast<int>(ctx.steps().size()) / 20));
  jump_->setRange(ctx.steps().empty() ? 0 : ctx.steps().front(), ctx.steps().empty() ? 0 : ctx.steps().back());
  updating_ = false;
}

void Timeline::onStepChanged(TraceContext& ctx) {
  updating_ = true;
  slider_->setValue(ctx.stepIndex());
  jump_->setValue(ctx.step());
  label_->setText(tr("%1 / %2  %3").arg(ctx.step()).arg(ctx.steps().empty() ? 0 : ctx.steps().back()).arg(QString::fromStdString(ctx.view().phase)));
  updating_ = false;
}

bool Timeline::playing() const { return timer_->isActive(); }
void Timeline::next() { ctx_.setStepIndex(ctx_.stepIndex() + 1); }
void Timeline::prev() { ctx_.setStepIndex(ctx_.stepIndex() - 1); }
void Timeline::first() { ctx_.setStepIndex(0); }
void Timeline::last() { ctx_.setStepIndex(static_cast<int32_t>(ctx_.steps().size()) - 1); }
void Timeline::focusJump() {
  jump_->setFocus();
  jump_->selectAll();
}
void Timeline::togglePlay() {
  if (timer_->isActive()) {
    timer_->stop();
    play_->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
  } else {
    if (ctx_.stepIndex() + 1 >= static_cast<int32_t>(ctx_.steps().size())) first();
    timer_->start();
    play_->setIcon(style()->standardIcon(QStyle::SP_MediaPause));
  }
}

}  // namespace triescope::gui
