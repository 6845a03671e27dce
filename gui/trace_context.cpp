#include "gui/trace_context.h"

#include <algorithm>
#include <chrono>

#include <QTimer>
#include <QtConcurrent/QtConcurrent>

#include "core/common/error.h"
#include "core/trace/gc_record.h"
#include "core/trace/keyframe_record.h"

namespace triescope::gui {

TraceContext::TraceContext(QObject* parent) : QObject(parent) {}
TraceContext::~TraceContext() { dropPrefetch(); }

void TraceContext::addViewer(ITraceViewer* v) {
  viewers_.push_back(v);
  if (loaded()) {
    v->onTraceLoaded(*this);
    v->onStepChanged(*this);
    v->onSelectionChanged(*this);
  }
}

void TraceContext::removeViewer(ITraceViewer* v) { viewers_.erase(std::remove(viewers_.begin(), viewers_.end(), v), viewers_.end()); }

TraceSteps TraceContext::steps() const { return a_ ? a_->replay->steps() : TraceSteps(); }

int32_t TraceContext::stepIndex() const { return a_ ? a_->step_index(step_) : -1; }

void TraceContext::setTraces(TraceDocumentPtr a, TraceDocumentPtr b) {
  dropPrefetch();
  viewsValid_ = backValid_ = false;
  a_ = std::move(a);
  b_ = std::move(b);
  shown_ = A;
  selected_ = -1;
  divergences_.clear();
  marks_.clear();
  if (a_ && b_) {
    divergences_ = trace_diff_all(a_->replay->records_view(), b_->replay->records_view());
    computeMarks();
  }
  step_ = steps().empty() ? 0 : steps().front();
  computeView();
  makeSpare();
  notifyTraceLoaded();
}

void TraceContext::replaceTraces(TraceDocumentPtr a, TraceDocumentPtr b) {
  const int32_t step = step_, sel = selected_;
  const Side side = shown_;
  dropPrefetch();
  viewsValid_ = backValid_ = false;
  a_ = std::move(a);
  b_ = std::move(b);
  shown_ = b_ ? side : A;
  divergences_.clear();
  marks_.clear();
  if (a_ && b_) {
    divergences_ = trace_diff_all(a_->replay->records_view(), b_->replay->records_view());
    computeMarks();
  }
  step_ = a_->step_index(step) >= 0 ? step : (steps().empty() ? 0 : steps().front());
  computeView();
  makeSpare();
  selected_ = sel < static_cast<int32_t>(view().nodes.size()) ? sel : -1;
  notifyTraceLoaded();
}

void TraceContext::notifyTraceLoaded() {
  for (auto* v : viewers_) v->onTraceLoaded(*this);
  Q_EMIT traceLoaded();
  for (auto* v : viewers_) v->onStepChanged(*this);
  Q_EMIT stepChanged(step_);
  for (auto* v : viewers_) v->onSelectionChanged(*this);
  Q_EMIT selectionChanged(selected_);
}

void TraceContext::setShownSide(Side s) {
  if (s == B && !b_) s = A;
  if (s == shown_) return;
  shown_ = s;
  computeForwardSlots();
  for (auto* v : viewers_) v->onStepChanged(*this);
  Q_EMIT stepChanged(step_);
}

void TraceContext::dropPrefetch() {
  for (auto& p : prefetch_) {
    if (p.future.isValid()) p.future.waitForFinished();
    p = Prefetch{};
  }
}

void TraceContext::setPrefetchEnabled(bool on) {
  prefetchOn_ = on;
  if (!on) dropPrefetch();
}

void TraceContext::prefetchSoon() {
  if (!prefetchOn_) return;
  // After the panes have painted this step: a replay running next to the
  // paint competes with it for the CPU and made the first frame slower.
  if (prefetchTimerArmed_) return;
  prefetchTimerArmed_ = true;
  QTimer::singleShot(0, this, [this] {
    prefetchTimerArmed_ = false;
    if (a_) schedulePrefetch();
  });
}

void TraceContext::schedulePrefetch() {
  const int32_t idx = stepIndex();
  const auto& s = steps();
  const int32_t want[2] = {idx > 0 ? s[static_cast<size_t>(idx - 1)] : -1,
                           idx >= 0 && idx + 1 < static_cast<int32_t>(s.size()) ? s[static_cast<size_t>(idx + 1)] : -1};
  for (int k = 0; k < 2; ++k) {
    Prefetch& p = prefetch_[k];
    if (want[k] < 0 || p.step == want[k]) continue;
    // The next step is advanced on the UI thread (TraceReplay::advance_into,
    // ~2 ms for 5,000 nodes and a 4096 x 4096 mask) and the previous one is
    // often the kept view: a replay in the background then only competes
    // with the paint for a 2-core CPU (docs/benchmarks-gui.md).
    if (k == 1 && viewsValid_) continue;
    if (k == 0 && backValid_ && backA_.step == want[0]) continue;
    // The documents are shared and read-only; the task keeps them alive.
    p.step = want[k];
    p.future = QtConcurrent::run([a = a_, b = b_, step = want[k]]() {
      Views v;
      try {
        v.a = a->replay->at(step);
        if (b) v.b = b->replay->at(step);
        v.ok = true;
      } catch (const std::exception&) {
        v.ok = false;  // replayed again on the UI thread, which reports it
      }
      return v;
    });
  }
}

void TraceContext::computeView() {
  const auto t0 = std::chrono::steady_clock::now();
  // The view being replaced: the start for advance(), or kept for a step back.
  StepView oldA = std::move(viewA_);
  std::optional<StepView> oldB = std::move(viewB_);
  const bool oldValid = viewsValid_;
  viewA_ = StepView{};
  viewB_.reset();
  viewsValid_ = false;
  fwd_ = ForwardLayout{};
  highlight_ = MaskCellHighlight{};  // its row and column named the old pass; viewers repaint on onStepChanged
  if (!a_) return;
  lastReplayMs_ = 0;
  auto done = [&](ViewSource src) {
    viewsValid_ = true;
    lastSource_ = src;
    if (oldValid && oldA.step != step_) {
      backA_ = std::move(oldA);
      backB_ = std::move(oldB);
      backValid_ = true;
    }
    prefetchSoon();
    computeForwardSlots();
    lastViewMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto& p : prefetch_)
    if (p.step == step_ && p.future.isValid()) {
      Views v = p.future.takeResult();
      p = Prefetch{};
      if (v.ok) {
        viewA_ = std::move(v.a);
        viewB_ = std::move(v.b);
        done(ViewSource::prefetched);
        return;
      }
    }
  if (backValid_ && backA_.step == step_) {
    viewA_ = std::move(backA_);
    viewB_ = std::move(backB_);
    backValid_ = false;
    done(ViewSource::kept);
    return;
  }
  try {
    // Forward from the shown step: only the records in between
    // (docs/benchmarks-gui.md: the cold adjacent step).
    const bool adv = oldValid && oldA.step < step_;
    const auto r0 = std::chrono::steady_clock::now();
    if (adv) {
      // Refill the view two steps back (dropped now anyway): a fresh 2 MB
      // mask per step costs its page faults, ~7 ms here (docs/benchmarks-gui.md).
      if (backValid_) {
        viewA_ = std::move(backA_);
        if (backB_) viewB_ = std::move(backB_);
        backValid_ = false;
      } else if (spareValid_) {
        viewA_ = std::move(spareA_);
        if (spareB_) viewB_ = std::move(spareB_);
        spareValid_ = false;
      }
      a_->replay->advance_into(oldA, step_, viewA_);
      if (b_) {
        if (!viewB_) viewB_.emplace();
        if (oldB) b_->replay->advance_into(*oldB, step_, *viewB_);
        else *viewB_ = b_->replay->at(step_);
      }
    } else {
      viewA_ = a_->replay->at(step_);
      if (b_) viewB_ = b_->replay->at(step_);
    }
    lastReplayMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count();
    done(adv ? ViewSource::advanced : ViewSource::replayed);
    return;
  } catch (const Error& e) {
    viewA_ = StepView{};  // not a half-refilled one
    viewB_.reset();
    Q_EMIT errorOccurred(QString::fromStdString(e.what()));
  }
  prefetchSoon();
  computeForwardSlots();
}

void TraceContext::makeSpare() {
  spareA_ = StepView{};
  spareB_.reset();
  spareValid_ = false;
  // After the first paint (a zero timer; the copy took 7-8 ms for a 4096 x
  // 4096 mask here). Any view will do as buffers: advance_into refills all.
  QTimer::singleShot(0, this, [this, a = a_.get()] {
    // Only a view that advance_into will refill is worth the copy: a loaded
    // step with a later one to step to, of the documents still loaded.
    if (a != a_.get() || spareValid_ || !viewsValid_ || stepIndex() < 0 || stepIndex() + 1 >= static_cast<int32_t>(steps().size())) return;
    spareA_ = viewA_;
    spareB_ = viewB_;
    spareValid_ = true;
  });
}

void TraceContext::computeForwardSlots() {
  fwd_ = ForwardLayout{};
  const TraceDocument* d = shownDoc();
  const int32_t idx = d ? d->step_index(step_) : -1;
  if (idx < 0 || static_cast<size_t>(idx) >= d->stats.size()) return;
  fwd_ = forward_layout(view(), d->stats[static_cast<size_t>(idx)].gc_after_forward);
}

int32_t TraceContext::forwardSlotOfNode(int32_t node) const {
  return fwd_.before_gc ? fwd_.slot_of(node) : slotOfNode(node);
}

int32_t TraceContext::nodeInForwardSlot(int32_t slot) const {
  return fwd_.before_gc ? fwd_.node_in_slot(slot) : nodeInSlot(slot);
}

void TraceContext::setStep(int32_t step) {
  if (!a_) return;
  const auto& s = steps();
  if (s.empty()) return;
  // Snap to an existing step.
  auto it = std::lower_bound(s.begin(), s.end(), step);
  if (it == s.end()) it = std::prev(s.end());
  if (*it == step_ && viewA_.step == step_ && !viewA_.nodes.empty()) return;
  step_ = *it;
  computeView();
  lastViewerMs_.clear();
  for (auto* v : viewers_) {
    const auto t0 = std::chrono::steady_clock::now();
    v->onStepChanged(*this);
    lastViewerMs_.emplace_back(v, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  Q_EMIT stepChanged(step_);
}

void TraceContext::setStepIndex(int32_t index) {
  const auto& s = steps();
  if (s.empty()) return;
  setStep(s[static_cast<size_t>(std::clamp<int32_t>(index, 0, static_cast<int32_t>(s.size()) - 1))]);
}

void TraceContext::selectNode(int32_t node) {
  const StepView& v = view();
  if (node < -1 || node >= static_cast<int32_t>(v.nodes.size())) node = -1;
  if (node == selected_) return;
  selected_ = node;
  for (auto* vw : viewers_) vw->onSelectionChanged(*this);
  Q_EMIT selectionChanged(selected_);
}

void TraceContext::setHighlight(MaskCellHighlight h) {
  if (h == highlight_) return;
  highlight_ = std::move(h);
  for (auto* vw : viewers_) vw->onHighlightChanged(*this);
  Q_EMIT highlightChanged();
}

int32_t TraceContext::rowOfNode(int32_t node) const {
  const StepView& v = view();
  if (!v.forward || node < 0) return -1;
  const auto& q = v.forward->queries;
  auto it = std::find(q.begin(), q.end(), node);
  return it == q.end() ? -1 : static_cast<int32_t>(it - q.begin());
}

int32_t TraceContext::slotOfNode(int32_t node) const {
  const StepView& v = view();
  if (node < 0 || node >= static_cast<int32_t>(v.nodes.size())) return -1;
  return v.nodes[static_cast<size_t>(node)].slot;
}

int32_t TraceContext::nodeInSlot(int32_t slot) const {
  const StepView& v = view();
  if (slot < 0 || slot >= static_cast<int32_t>(v.slot_to_node.size())) return -1;
  return v.slot_to_node[static_cast<size_t>(slot)];
}

int32_t TraceContext::nodeOfRow(int32_t row) const {
  const StepView& v = view();
  if (!v.forward || row < 0 || row >= static_cast<int32_t>(v.forward->queries.size())) return -1;
  return v.forward->queries[static_cast<size_t>(row)];
}

namespace {
// A divergence's path as (the keys before its first array index, joined
// with dots; that index; the key after it, or "[j]" for a nested index):
// {added}[3]{token} -> ("added", 3, "token"); {forward}{mask}{rows}[1] -> ("forward.mask.rows", 1, "").
bool split_path(const std::vector<TracePathStep>& path, std::string& head, size_t& idx, std::string& rest) {
  size_t k = 0;
  head.clear();
  for (; k < path.size() && path[k].index < 0; ++k) head += (head.empty() ? "" : ".") + path[k].key;
  if (k == path.size() || head.empty()) return false;
  idx = static_cast<size_t>(path[k].index);
  rest.clear();
  if (k + 1 < path.size()) rest = path[k + 1].index >= 0 ? "[" + std::to_string(path[k + 1].index) + "]" : path[k + 1].key;
  return true;
}
// The diff path of a field of the target's pass: "forward.queries".
std::string forward_path(const char* field) { return std::string(kForwardField) + "." + field; }
int32_t int_at(const json& rec, const char* arr, size_t i, const char* key) {
  if (!rec.contains(arr) || !rec[arr].is_array() || i >= rec[arr].size()) return -1;
  const json& e = rec[arr][i];
  if (key == nullptr) return e.is_number_integer() ? e.get<int32_t>() : -1;
  return e.is_object() && e.contains(key) && e[key].is_number_integer() ? e[key].get<int32_t>() : -1;
}
}  // namespace

// Divergences name a record and a dotted field path; turn each into the
// cells, nodes and slots the panes mark. Ids come from trace A's record.
void TraceContext::computeMarks() {
  marks_header_ = 0;
  const TraceRecords ra = a_->replay->records_view();
  json scratch;
  for (size_t k = 0; k < divergences_.size(); ++k) {
    const TraceDivergence& d = divergences_[k];
    if (d.step < 0) {
      ++marks_header_;
      continue;
    }
    StepMarks& m = marks_[static_cast<int32_t>(d.step)];
    m.divergences.push_back(k);
    if (d.record >= ra.size()) continue;
    const json& rec = ra.at(d.record, scratch);
    std::string head, rest;
    size_t i = 0;
    if (!split_path(d.path, head, i, rest)) continue;
    if (head == forward_path(kForwardMask) + ".rows") {
      m.mask_cells.emplace(static_cast<int32_t>(i), static_cast<int32_t>(d.index));
      const int32_t q = rec.contains(kForwardField) ? int_at(rec[kForwardField], kForwardQueries, i, nullptr) : -1;
      if (q >= 0) m.nodes.insert(q);
    } else if (head == forward_path(kForwardQueries) || head == forward_path(kForwardPositions) || head == forward_path(kForwardSlots)) {
      if (!rec.contains(kForwardField)) continue;
      const int32_t q = int_at(rec[kForwardField], kForwardQueries, i, nullptr);
      if (q >= 0) m.nodes.insert(q);
      const int32_t s = int_at(rec[kForwardField], kForwardSlots, i, nullptr);
      if (head == forward_path(kForwardSlots) && s >= 0) m.kv_slots.insert(s);
      if (head == forward_path(kForwardPositions)) m.positions.insert(static_cast<int32_t>(i));
      if (head == forward_path(kForwardQueries)) m.mask_cells.emplace(static_cast<int32_t>(i), -1);
    } else if (head == "added" || head == kKeyframeNodes) {
      const int32_t id = int_at(rec, head.c_str(), i, "id");
      if (id >= 0) m.nodes.insert(id);
      if (rest == "slot") {
        const int32_t s = int_at(rec, head.c_str(), i, "slot");
        if (s >= 0) m.kv_slots.insert(s);
      }
    } else if (head == "status" || head == "chosen") {
      const int32_t id = int_at(rec, head.c_str(), i, "node");
      if (id >= 0) m.nodes.insert(id);
    } else if (head == kGcMoves) {
      const auto mv = rec.find(kGcMoves);
      if (mv != rec.end() && mv->is_array() && i < mv->size() && (*mv)[i].is_array() && (*mv)[i].size() == 2)
        m.kv_slots.insert((*mv)[i][1].get<int32_t>());
    } else if (head == kKeyframeSlotToNode) {
      m.kv_slots.insert(static_cast<int32_t>(i));
    }
  }
}

const StepMarks& TraceContext::marks() const {
  static const StepMarks none;
  auto it = marks_.find(step_);
  return it == marks_.end() ? none : it->second;
}

const StepMarks* TraceContext::marksAt(int32_t step) const {
  auto it = marks_.find(step);
  return it == marks_.end() ? nullptr : &it->second;
}

int32_t TraceContext::nextDivergenceStep() const {
  if (marks_.empty()) return -1;
  auto it = marks_.upper_bound(step_);
  return it == marks_.end() ? marks_.begin()->first : it->first;
}

int32_t TraceContext::prevDivergenceStep() const {
  if (marks_.empty()) return -1;
  auto it = marks_.lower_bound(step_);
  if (it == marks_.begin()) return std::prev(marks_.end())->first;
  return std::prev(it)->first;
}

}  // namespace triescope::gui
