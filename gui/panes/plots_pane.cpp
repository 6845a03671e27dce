#include "gui/panes/plots_pane.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
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

// A value axis on `side` of `c`, titled, with integer labels when `integers`.
QValueAxis* valueAxis(QChart* c, Qt::Alignment side, const QString& title, bool integers) {
  auto* a = new QValueAxis;
  a->setTitleText(title);
  if (integers) a->setLabelFormat("%d");
  c->addAxis(a, side);
  return a;
}

// An axis of integer values up to `last`: ticks from 0 on a 1-2-5 interval
// (at most about 8 of them), so its "%d" labels are never fractional ticks.
void integerTicks(QValueAxis* ax, double last) {
  double iv = 1;
  while (last / iv > 8) iv *= (QString::number(iv).startsWith('2') ? 2.5 : 2);
  ax->setTickType(QValueAxis::TicksDynamic);
  ax->setTickAnchor(0);
  ax->setTickInterval(iv);
}

// Every series of `lines` drawn against the axes x and y.
void attachAxes(std::initializer_list<QAbstractSeries*> lines, QAbstractAxis* x, QAbstractAxis* y) {
  for (QAbstractSeries* s : lines) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
}

// A line of at most 2 * kPlotBuckets points: every point of a trace of as
// many steps or fewer; of a longer one, per bucket of steps the lowest and
// the highest point, in step order (the line's envelope: all a chart a few
// thousand pixels wide shows), so a trace of millions of steps is not a
// QPointF a step in each series.
constexpr size_t kPlotBuckets = 8192;

class PlotLine {
 public:
  explicit PlotLine(size_t steps) : per_bucket_((steps + kPlotBuckets - 1) / kPlotBuckets) {}
  void add(size_t step, double y) {
    const QPointF p(static_cast<double>(step), y);
    if (per_bucket_ <= 1) {
      points_.append(p);
      return;
    }
    const size_t b = step / per_bucket_;
    if (!has_ || b != bucket_) {
      flush();
      bucket_ = b, lo_ = hi_ = p, has_ = true;
      return;
    }
    if (y < lo_.y()) lo_ = p;
    if (y > hi_.y()) hi_ = p;
  }
  QList<QPointF> points() {
    flush();
    return std::move(points_);
  }

 private:
  void flush() {
    if (!has_) return;
    points_.append(lo_.x() <= hi_.x() ? lo_ : hi_);
    if (lo_ != hi_) points_.append(lo_.x() <= hi_.x() ? hi_ : lo_);
    has_ = false;
  }
  size_t per_bucket_;
  QList<QPointF> points_;
  bool has_ = false;
  size_t bucket_ = 0;
  QPointF lo_, hi_;
};
}  // namespace

PlotsPane::PlotsPane(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  auto jump = [this](double x) { ctx_.setStep(static_cast<int32_t>(std::lround(x))); };
  auto* kvChart = new QChart;
  kvChart->setTitle(tr("KV slots per step: trie vs batch baseline"));
  trie_ = series(kvChart, tr("trie"), QColor(33, 84, 170), 2);
  peak_ = series(kvChart, tr("trie peak"), QColor(33, 84, 170), 1, Qt::DashLine);
  batch_ = series(kvChart, tr("batch"), QColor(220, 90, 30), 2);
  marker_ = series(kvChart, tr("step"), QColor(255, 170, 0), 2);
  kvX_ = valueAxis(kvChart, Qt::AlignBottom, tr("step"), true);
  kvY_ = valueAxis(kvChart, Qt::AlignLeft, tr("slots"), true);
  // Short plots elide the tick labels to "..." otherwise.
  kvY_->setTruncateLabels(false);
  attachAxes({trie_, peak_, batch_, marker_}, kvX_, kvY_);
  kvChart->legend()->setAlignment(Qt::AlignBottom);
  kvChart->setMargins(QMargins(4, 4, 4, 4));
  kvView_ = new ClickChartView(kvChart, jump);
  kvView_->setRenderHint(QPainter::Antialiasing);

  auto* tc = new QChart;
  tc->setTitle(tr("per-step time recorded by the backend"));
  time_ = series(tc, tr("ms per step"), QColor(0, 140, 100), 1.5);
  timeMarker_ = series(tc, tr("current step"), QColor(255, 170, 0), 2);
  tX_ = valueAxis(tc, Qt::AlignBottom, tr("step"), true);
  tY_ = valueAxis(tc, Qt::AlignLeft, tr("ms"), false);
  attachAxes({time_, timeMarker_}, tX_, tY_);
  timeView_ = new ClickChartView(tc, jump);

  accChart_ = new QChart;
  accChart_->legend()->setAlignment(Qt::AlignBottom);
  accChart_->setMargins(QMargins(4, 4, 4, 4));
  accView_ = new ClickChartView(accChart_, [this, jump](double x) {
    if (!acc_.has_layers()) jump(x);  // the bar chart's x is a layer, not a step
  });
  accView_->setRenderHint(QPainter::Antialiasing);

  tabs_ = new QTabWidget(this);
  tabs_->addTab(kvView_, tr("KV slots"));
  tabs_->addTab(accView_, tr("acceptance"));
  tabs_->addTab(timeView_, tr("step time"));
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(tabs_);
  watchContext();
}

int PlotsPane::seriesPointCount(int s) const {
  const QLineSeries* ser = s == 0 ? trie_ : s == 1 ? batch_ : peak_;
  return static_cast<int>(ser->count());
}

void PlotsPane::onTraceLoaded(TraceContext& ctx) {
  const TraceDocument* doc = ctx.doc();
  PlotLine t(doc->stats.size()), b(doc->stats.size()), pk(doc->stats.size()), tmLine(doc->stats.size());
  kvMax_ = 1;
  tMax_ = 0;
  for (const StepStat& s : doc->stats) {
    const size_t step = static_cast<size_t>(s.step);
    if (s.slots >= 0) t.add(step, double(s.slots));
    if (s.batch_slots >= 0) b.add(step, double(s.batch_slots));
    if (s.peak >= 0) pk.add(step, double(s.peak));
    if (s.seconds >= 0) tmLine.add(step, s.seconds * 1e3);
    kvMax_ = std::max({kvMax_, double(s.slots), double(s.batch_slots), double(s.peak)});
    tMax_ = std::max(tMax_, s.seconds * 1e3);
  }
  const QList<QPointF> tm = tmLine.points();
  trie_->replace(t.points());
  batch_->replace(b.points());
  peak_->replace(pk.points());
  time_->replace(tm);
  const double last = std::max(1, doc->replay->last_step());
  for (QValueAxis* ax : {kvX_, tX_}) integerTicks(ax, last);
  kvY_->applyNiceNumbers();
  kvX_->setRange(0, last);
  kvY_->setRange(0, kvMax_ * 1.05);
  kvY_->applyNiceNumbers();
  tX_->setRange(0, last);
  tY_->setRange(0, std::max(tMax_ * 1.1, 1e-3));
  tabs_->setTabEnabled(2, !tm.isEmpty());
  tabs_->setTabText(2, tm.isEmpty() ? tr("step time (not recorded)") : tr("step time"));
  tabs_->setTabToolTip(2, tm.isEmpty() ? tr("no step record of this trace has a \"seconds\" field (wall time per step)") : QString());
  buildAcceptance(*doc);
}

bool PlotsPane::hasAcceptance() const { return acc_.has_layers() || !acc_.per_step.empty(); }

void PlotsPane::buildAcceptance(const TraceDocument& doc) {
  acc_ = acceptance_series(*doc.replay);
  accChart_->removeAllSeries();
  for (QAbstractAxis* a : accChart_->axes()) {
    accChart_->removeAxis(a);
    delete a;
  }
  accMarker_ = nullptr;
  const bool on = hasAcceptance();
  tabs_->setTabEnabled(1, on);
  tabs_->setTabText(1, on ? tr("acceptance") : tr("acceptance (no verify steps)"));
  if (!on) {
    accChart_->setTitle(QString());
    return;
  }
  if (acc_.has_layers()) {
    // Per draft layer over the whole trace: how often the layer passed
    // (W_L^(l) drafts accepted), the fraction of tested drafts accepted, and
    // the mean of the decoder's Eq. 5 prediction when it recorded one.
    int32_t iters = 0;
    for (const auto& L : acc_.layers) iters = std::max(iters, L.verified);
    accChart_->setTitle(tr("acceptance per draft layer (%1 verify steps)").arg(iters));
    auto* pass = new QBarSet(tr("layer passed"));
    auto* draft = new QBarSet(tr("drafts accepted / tested"));
    auto* pred = new QBarSet(tr("Eq. 5 predicted pass (mean)"));
    pass->setColor(QColor(0, 150, 136));
    draft->setColor(QColor(120, 190, 230));
    pred->setColor(QColor(200, 200, 200));
    QStringList cats;
    bool anyPred = false;
    for (const auto& L : acc_.layers) {
      pass->append(L.verified ? double(L.passed) / L.verified : 0.0);
      draft->append(L.tested ? double(L.accepted) / L.tested : 0.0);
      pred->append(L.verified ? L.predicted_sum / L.verified : 0.0);
      anyPred |= L.predicted_sum > 0;
      cats << tr("layer %1\n%2 verified, mean W_L %3").arg(L.layer).arg(L.verified).arg(L.verified ? L.width_sum / L.verified : 0.0, 0, 'f', 1);
    }
    auto* bars = new QBarSeries;
    bars->append(pass);
    bars->append(draft);
    if (anyPred) bars->append(pred);
    else delete pred;
    bars->setLabelsVisible(true);
    bars->setLabelsFormat(QStringLiteral("@value"));
    bars->setLabelsPrecision(2);
    accChart_->addSeries(bars);
    auto* ax = new QBarCategoryAxis;
    ax->append(cats);
    accChart_->addAxis(ax, Qt::AlignBottom);
    QValueAxis* ay = valueAxis(accChart_, Qt::AlignLeft, tr("fraction"), false);
    ay->setRange(0, 1.05);
    attachAxes({bars}, ax, ay);
    return;
  }
  // Lookahead: tokens produced per pass (accepted candidate tokens + the greedy one).
  accChart_->setTitle(tr("tokens accepted per pass (1 = no candidate token matched)"));
  auto* line = series(accChart_, tr("tokens per pass"), QColor(0, 150, 136), 1.5);
  accMarker_ = series(accChart_, tr("current step"), QColor(255, 170, 0), 2);
  QList<QPointF> pts;
  double sum = 0;
  accMax_ = 1;
  for (const auto& [st, n] : acc_.per_step) {
    pts.append(QPointF(st, n));
    sum += n;
    accMax_ = std::max(accMax_, double(n));
  }
  line->replace(pts);
  line->setName(tr("tokens per pass (mean %1)").arg(sum / std::max<size_t>(1, acc_.per_step.size()), 0, 'f', 2));
  QValueAxis* ax = valueAxis(accChart_, Qt::AlignBottom, tr("step"), true);
  QValueAxis* ay = valueAxis(accChart_, Qt::AlignLeft, tr("tokens"), true);
  ax->setRange(0, std::max(1, doc.replay->last_step()));
  ay->setRange(0, accMax_ + 1);
  integerTicks(ax, std::max(1, doc.replay->last_step()));
  integerTicks(ay, accMax_ + 1);
  attachAxes({line, accMarker_}, ax, ay);
}

void PlotsPane::onStepChanged(TraceContext& ctx) {
  marker_->replace(QList<QPointF>{{double(ctx.step()), 0}, {double(ctx.step()), kvMax_ * 1.05}});
  timeMarker_->replace(QList<QPointF>{{double(ctx.step()), 0}, {double(ctx.step()), std::max(tMax_ * 1.1, 1e-3)}});
  if (accMarker_) accMarker_->replace(QList<QPointF>{{double(ctx.step()), 0}, {double(ctx.step()), accMax_ + 1}});
}

}  // namespace triescope::gui
