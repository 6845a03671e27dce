// The one owner of GUI state (RenderDoc's ICaptureViewer / SetEventID; Tracy's
// m_compare): the loaded trace, in diff mode a second one, the selected step
// and node. Panes register as viewers and are told when any of them changes.
#pragma once
#include <QFuture>
#include <QObject>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/analysis/forward_layout.h"
#include "core/trace/trace_diff.h"
#include "gui/trace_document.h"

namespace triescope::gui {

class TraceContext;

// What a viewer is told; a viewer overrides what it draws from (every
// viewer draws the step). Only the context calls these, so a viewer (each
// pane, the main window) overrides them in its private section: they are not
// part of its interface.
class ITraceViewer {
 public:
  virtual ~ITraceViewer() = default;
  virtual void onTraceLoaded(TraceContext&) {}
  virtual void onStepChanged(TraceContext& ctx) = 0;
  virtual void onSelectionChanged(TraceContext&) {}
  // The mask cell pointed at changed (TraceContext::highlight()).
  virtual void onHighlightChanged(TraceContext&) {}
};

// The mask cell the user points at (hover or click in the mask pane): the
// tree path between its query and key and their slots, drawn by the trie and
// KV panes. Distinct from the selection (a click also selects the query);
// cleared when the shown step changes.
struct MaskCellHighlight {
  int32_t row = -1, col = -1;        // the cell
  int32_t query = -1, key = -1;      // their nodes, -1 where none (free slot, batch layout)
  std::vector<int32_t> path;         // from the query up to the key or the common ancestor, then down to the key
  int32_t querySlot = -1, keySlot = -1;  // in the layout the pass read (forward slots)
  bool violation = false;            // `check` finds a fault on the cell
  bool empty() const { return row < 0; }
  bool operator==(const MaskCellHighlight& o) const = default;
};

// Divergences of the shown step, mapped onto what the panes draw.
struct StepMarks {
  std::set<std::pair<int32_t, int32_t>> mask_cells;  // (row, column); column -1 = the whole row
  std::set<int32_t> nodes;                          // node ids
  std::set<int32_t> kv_slots;                       // KV slots
  std::set<int32_t> positions;                      // forward rows whose position id differs
  std::vector<size_t> divergences;                  // indices into TraceContext::divergences()
  bool empty() const { return divergences.empty(); }
};

class TraceContext : public QObject {
  Q_OBJECT
 public:
  enum Side { A = 0, B = 1 };

  explicit TraceContext(QObject* parent = nullptr);
  ~TraceContext() override;

  void addViewer(ITraceViewer* v);
  void removeViewer(ITraceViewer* v);

  // `b` non-null: diff mode, both traces compared with trace_diff_all (the
  // function `triescope diff` uses).
  void setTraces(TraceDocumentPtr a, TraceDocumentPtr b = nullptr);
  // The same trace(s), more complete (a preview replaced by the full file):
  // keeps the step, the selection and the shown side.
  void replaceTraces(TraceDocumentPtr a, TraceDocumentPtr b = nullptr);
  bool loaded() const { return a_ != nullptr; }
  bool diffMode() const { return b_ != nullptr; }
  const TraceDocument* doc(Side s = A) const { return s == A ? a_.get() : b_.get(); }
  // Which trace the panes draw in diff mode.
  Side shownSide() const { return shown_; }
  void setShownSide(Side s);
  const TraceDocument* shownDoc() const { return shown_ == B && b_ ? b_.get() : a_.get(); }

  TraceSteps steps() const;
  int32_t step() const { return step_; }
  int32_t stepIndex() const;
  void setStep(int32_t step);
  void setStepIndex(int32_t index);
  // State of the shown trace at the current step; the other side in diff mode.
  const StepView& view() const { return shown_ == B && viewB_ ? *viewB_ : viewA_; }
  const StepView* viewOf(Side s) const { return s == A ? &viewA_ : (viewB_ ? &*viewB_ : nullptr); }

  // Off: no background replay of the neighbouring steps (the bench's truly
  // cold steps). On by default.
  void setPrefetchEnabled(bool on);
  // Cost of the last setStep, for the bench: the state change (prefetched,
  // kept, advanced or replayed view) and each viewer's onStepChanged.
  enum class ViewSource { prefetched, kept, advanced, replayed };
  ViewSource lastViewSource() const { return lastSource_; }
  double lastViewMs() const { return lastViewMs_; }
  double lastReplayMs() const { return lastReplayMs_; }  // the advance()/at() call alone
  const std::vector<std::pair<ITraceViewer*, double>>& lastViewerMs() const { return lastViewerMs_; }

  int32_t selectedNode() const { return selected_; }
  void selectNode(int32_t node);  // -1 clears
  // Linked-selection helpers over the current view.
  int32_t rowOfNode(int32_t node) const;  // forward row of a query node, -1
  int32_t slotOfNode(int32_t node) const; // KV slot, -1
  int32_t nodeInSlot(int32_t slot) const; // -1
  int32_t nodeOfRow(int32_t row) const;   // query node of a forward row, -1
  // The KV layout the forward pass read (the mask's columns). The same as
  // slotOfNode / nodeInSlot unless the step compacted the cache after its
  // pass (lookahead): then the pre-gc layout, rebuilt from the gc moves and
  // the slots the queries wrote; -1 for a slot whose node is not known.
  int32_t forwardSlotOfNode(int32_t node) const;
  int32_t nodeInForwardSlot(int32_t slot) const;
  bool forwardBeforeGc() const { return fwd_.before_gc; }
  const ForwardLayout& forwardLayout() const { return fwd_; }

  const MaskCellHighlight& highlight() const { return highlight_; }
  void setHighlight(MaskCellHighlight h);  // an empty one clears

  const std::vector<TraceDivergence>& divergences() const { return divergences_; }
  const StepMarks& marks() const;  // for the current step
  const StepMarks* marksAt(int32_t step) const;
  // First step > current with a divergence (wraps to the first), -1 if none.
  int32_t nextDivergenceStep() const;
  int32_t prevDivergenceStep() const;

 Q_SIGNALS:
  void traceLoaded();
  void stepChanged(int32_t step);
  void selectionChanged(int32_t node);
  void highlightChanged();
  // A record of the shown step could not be replayed (message names file:line and field).
  void errorOccurred(const QString& message);

 private:
  void computeView();
  // Every viewer and signal told of a new trace, then of its step and selection.
  void notifyTraceLoaded();
  void computeMarks();
  void computeForwardSlots();
  ForwardLayout fwd_;  // the layout the shown step's forward pass read (core/analysis/forward_layout.h)
  // Replays the steps next to the shown one in the background, so stepping
  // to a neighbour costs no replay on the UI thread (docs/benchmarks-gui.md).
  struct Views {
    StepView a;
    std::optional<StepView> b;
    bool ok = false;
  };
  struct Prefetch {
    int32_t step = -1;
    QFuture<Views> future;
  };
  void schedulePrefetch();
  void prefetchSoon();
  bool prefetchTimerArmed_ = false;
  void dropPrefetch();
  Prefetch prefetch_[2];  // previous and next step
  bool prefetchOn_ = true;
  // The view shown before the current one (a step back after a step forward
  // needs no replay), and whether viewA_/viewB_ belong to the documents now
  // loaded (TraceReplay::advance continues only from its own views).
  StepView backA_;
  std::optional<StepView> backB_;
  bool viewsValid_ = false, backValid_ = false;
  // Buffers for the first step forward after a load, when there is no view
  // two steps back to refill: a copy of the loaded step's view made at load
  // time, so its pages (a 4096 x 4096 mask is 2 MB) are faulted in then and
  // not on the first key press (docs/benchmarks-gui.md).
  void makeSpare();
  StepView spareA_;
  std::optional<StepView> spareB_;
  bool spareValid_ = false;
  ViewSource lastSource_ = ViewSource::replayed;
  double lastViewMs_ = 0, lastReplayMs_ = 0;
  std::vector<std::pair<ITraceViewer*, double>> lastViewerMs_;

  std::vector<ITraceViewer*> viewers_;
  TraceDocumentPtr a_, b_;
  Side shown_ = A;
  int32_t step_ = 0;
  int32_t selected_ = -1;
  MaskCellHighlight highlight_;
  StepView viewA_;
  std::optional<StepView> viewB_;
  std::vector<TraceDivergence> divergences_;
  std::map<int32_t, StepMarks> marks_;  // step -> marks
  int32_t marks_header_ = 0;            // divergences outside any step (header, summary)
};

// A pane's tie to the context: it holds the context as ctx_, registers with
// watchContext() (last in the pane's constructor: a loaded context calls the
// viewer back at once) and leaves the context when destroyed.
class ContextViewer : public ITraceViewer {
 public:
  ~ContextViewer() override { ctx_.removeViewer(this); }

 protected:
  explicit ContextViewer(TraceContext& ctx) : ctx_(ctx) {}
  void watchContext() { ctx_.addViewer(this); }
  TraceContext& ctx_;
};

}  // namespace triescope::gui
