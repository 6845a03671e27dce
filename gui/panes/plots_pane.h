// Plots over the whole trace (Qt Charts): KV slots per step for the trie vs
// the batch baseline, acceptance per draft layer (DSBD, speculative) or per
// pass (lookahead), and per-step time when the backend recorded it; a
// marker follows the current step; clicking a plot jumps to that step.
#pragma once
#include <QWidget>

#include "gui/trace_context.h"
#include "core/analysis/verify_info.h"

class QChart;
class QChartView;
class QLineSeries;
class QTabWidget;
class QValueAxis;

namespace triescope::gui {

class PlotsPane final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  explicit PlotsPane(TraceContext& ctx, QWidget* parent = nullptr);
  int seriesPointCount(int series) const;  // 0 trie slots, 1 batch slots, 2 peak
  // Acceptance tab (speculative traces): per-layer bars or per-step line.
  bool hasAcceptance() const;
  const AcceptanceSeries& acceptance() const { return acc_; }
  QChart* acceptanceChart() const { return accChart_; }
  QTabWidget* tabs() const { return tabs_; }

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  QTabWidget* tabs_;
  QChartView* kvView_;
  QChartView* timeView_;
  QChartView* accView_;
  QChart* accChart_;
  AcceptanceSeries acc_;
  QLineSeries* accMarker_ = nullptr;
  double accMax_ = 1;
  void buildAcceptance(const TraceDocument& doc);
  QLineSeries *trie_, *batch_, *peak_, *marker_, *time_, *timeMarker_;
  QValueAxis *kvX_, *kvY_, *tX_, *tY_;
  double kvMax_ = 1, tMax_ = 1;
};

}  // namespace triescope::gui
