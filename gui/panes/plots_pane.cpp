#include "gui/panes/plots_pane.h"

#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QMouseEvent>
#include <QTabWidget>
#include <QValueAxis>
#include <QVBoxLayout>

namespace triescope::gui {

namespace {
class ClickChartView final : public QChartView {
 public:
  ClickChartView(QChart* c, std::function<void(double)> onX) : QChartView(c), onX_(std::move(onX)) {}

 protected:
  void mousePressEvent(QMouseEvent* e) override {
    const QPointF v = chart()->mapToValue(chart()->mapFromScene(mapToScene(e->position().toPoint())));
    onX_(v.x());
  }

 private:
  std::function<void(double)> onX_;
};

QLineSeries* series(QChart* c, const QString& name, const QColor& col, double width, Qt::PenStyle style = Qt::SolidLine) {
  auto* s = new QLineSeries;
  s->setName(name);
  QPen p(col, width, style);
  s->setPen(p);
  c->addSeries(s);
  return s;
}
}  // namespace

PlotsPane::PlotsPane(TraceContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  auto jump = [this](double x) { ctx_.setStep(static_cast<int32_t>(std::lround(x))); };
  auto* kv = new QChart;
  kv->setTitle(tr("KV slots per step: trie vs batch baseline"));
  trie_ = series(kv, tr("trie"), QColor(33, 84, 170), 2);
  peak_ = series(kv, tr("trie peak"), QColor(33, 84, 170), 1, Qt::DashLine);
  batch_ = series(kv, tr("batch"), QColor(220, 90, 30), 2);
  marker_ = series(kv, tr("step"), QColor(255, 170, 0), 2);
  kvX_ = new QValueAxis;
  kvY_ = new QValueAxis;
  kvX_->setTitleText(tr("step"));
  kvY_->setTitleText(tr("slots"));
  kvX_->setLabelFormat("%d");
  kvY_->setLabelFormat("%d");
  kv->addAxis(kvX_, Qt::AlignBottom);
  kv->addAxis(kvY_, Qt::AlignLeft);
  for (auto* s : {trie_, peak_, batch_, marker_}) {
    s->attachAxis(kvX_);
    s->attachAxis(kvY_);
  }
  kv->legend()->setAlignment(Qt::AlignBottom);
  kv->setMargins(QMargins(4, 4, 4, 4));
  kvView_ = new ClickChartView(kv, jump);
  kvView_->setRenderHint(QPainter::Antialiasing);

  auto* tc = new QChart;
  tc->setTitle(tr("per-step time recorded by the backend"));
  time_ = series(tc, tr("ms per step"), QColor(0, 140, 100), 1.5);
  timeMarker_ = series(tc, tr("current step"), QColor(255, 170, 0), 2);
  tX_ = new QValueAxis;
  tY_ = new QValueAxis;
  tX_->setTitleText(tr("step"));
  tY_->setTitleText(tr("ms"));
  tX_->setLabelFormat("%d");
  tc->addAxis(tX_, Qt::AlignBottom);
  tc->addAxis(tY_, Qt::AlignLeft);
  for (auto* s : {time_, timeMarker_}) {
    s->attachAxis(tX_);
    s->attachAxis(tY_);
  }
  timeView_ = new ClickChartView(tc, jump);

  tabs_ = new QTabWidget(this);
  tabs_->addTab(kvView_, tr("KV slots"));
  tabs_->addTab(timeView_, tr("step time"));
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(tabs_);
  ctx_.addViewer(this);
}

PlotsPane::~PlotsPane() { ctx_.removeViewer(this); }

int PlotsPane::seriesPointCount(int s) const {
  const QLineSeries* ser = s == 0 ? trie_ : s == 1 ? batch_ : peak_;
  return static_cast<int>(ser->count());
}

void PlotsPane::onTraceLoaded(TraceContext& ctx) {
  const TraceDocument* doc = ctx.doc();
  QList<QPointF> t, b, pk, tm;
  kvMax_ = 1;
  tMax_ = 0;
  for (const StepStat& s : doc->stats) {
    if (s.slots >= 0) t.append(QPointF(s.step, double(s.slots)));
    if (s.batch_slots >= 0) b.append(QPointF(s.step, double(s.batch_slots)));
    if (s.peak >= 0) pk.append(QPointF(s.step, double(s.peak)));
    if (s.seconds >= 0) tm.append(QPointF(s.step, s.seconds * 1e3));
    kvMax_ = std::max({kvMax_, double(s.slots), double(s.batch_slots), double(s.peak)});
    tMax_ = std::max(tMax_, s.seconds * 1e3);
  }
  trie_->replace(t);
  batch_->replace(b);
  peak_->replace(pk);
  time_->replace(tm);
  const double last = std::max(1, doc->replay->last_step());
  // Integer steps: ticks on a 1-2-5 interval, never fractional labels.
  double iv = 1;
  while (last / iv > 8) iv *= (QString::number(iv).startsWith('2') ? 2.5 : 2);
  for (QValueAxis* ax : {kvX_, tX_}) {
    ax->setTickType(QValueAxis::TicksDynamic);
    ax->setTickAnchor(0);
    ax->setTickInterval(iv);
  }
  kvY_->applyNiceNumbers();
  kvX_->setRange(0, last);
  kvY_->setRange(0, kvMax_ * 1.05);
  kvY_->applyNiceNumbers();
  tX_->setRange(0, last);
  tY_->setRange(0, std::max(tMax_ * 1.1, 1e-3));
  tabs_->setTabEnabled(1, !tm.isEmpty());
  tabs_->setTabToolTip(1, tm.isEmpty() ? tr("this trace has no per-step \"seconds\"") : QString());
}

void PlotsPane::onStepChanged(TraceContext& ctx) {
  marker_->replace(QList<QPointF>{{double(ctx.step()), 0}, {double(ctx.step()), kvMax_ * 1.05}});
  timeMarker_->replace(QList<QPointF>{{double(ctx.step()), 0}, {double(ctx.step()), std::max(tMax_ * 1.1, 1e-3)}});
}

}  // namespace triescope::gui
