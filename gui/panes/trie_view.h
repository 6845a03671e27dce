// Trie / forest pane: the tree after the current step, laid out by the
// headless layout library and drawn in a QGraphicsScene.
#pragma once
#include <QWidget>

#include <deque>
#include <map>
#include <tuple>
#include <memory>
#include <vector>

#include "gui/layout/tree_layout.h"
#include "gui/trace_context.h"

class QGraphicsScene;
class QGraphicsView;
class QCheckBox;
class QLabel;

namespace triescope::gui {

class TreeItem;

class TrieView final : public QWidget, public ContextViewer {
  Q_OBJECT
 public:
  struct CachedLayout;
  explicit TrieView(TraceContext& ctx, QWidget* parent = nullptr);

  void setCollapsePrompt(bool on);
  void setHideCollected(bool on);  // drop nodes whose KV was garbage-collected
  void setFollow(bool on);         // keep this step's new nodes in view
  bool collapsePrompt() const { return collapse_; }
  void fit();
  // For tests and export.
  layout::LayoutEngine engine() const { return engine_; }
  int shownNodeCount() const;
  QPointF nodeScenePos(int32_t node) const;  // NaN if not shown
  int32_t nodeAtScenePos(QPointF p) const;
  // The nodes of the highlighted path (TraceContext::highlight) drawn now:
  // the ones the layout shows (a folded prompt token is not).
  std::vector<int32_t> highlightedNodes() const;
  QGraphicsView* graphicsView() const { return view_; }
  QGraphicsScene* scene() const { return scene_; }
  // Set before the first layout: trees above this size use the tidy layout.
  void setMaxDotNodes(int n) {
    max_dot_ = n;
    dropLayouts();
  }

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  void onHighlightChanged(TraceContext& ctx) override;  // the pointed mask cell's path, drawn gold
  void rebuild();
  void clicked(int32_t node);

  QGraphicsScene* scene_;
  QGraphicsView* view_;
  QCheckBox* collapseBox_;
  QCheckBox* hideBox_;
  QCheckBox* followBox_;
  bool hideCollected_ = false;
  // Per node id: labels and box width. A node's token and score never change,
  // so they are measured once per trace, not once per step.
  struct NodeLabel {
    QString line1, line2;
    double width = -1;
  };
  std::vector<NodeLabel> labels_;
  bool follow_ = true;
  void followAdded();
  class StatusText* info_;
  TreeItem* item_ = nullptr;
  bool collapse_ = true;
  bool fitPending_ = true;
  int max_dot_ = layout::LayoutOptions{}.max_dot_nodes;
  layout::LayoutEngine engine_ = layout::LayoutEngine::dot;
  // Node ids are dense and never reused, so within one trace the structure
  // after a step is fixed by the node count: cache layouts by it.
  // At most kMaxLayouts, the oldest evicted first; an evicted layout's
  // buffers are refilled by the next one (a layout of 5,000 nodes is ~0.9 MB:
  // fresh memory per step cost ~200 page faults, 2-3 ms here), and spares
  // with their pages touched are made when a trace is loaded, so the first
  // steps after opening find warm buffers too (docs/benchmarks-gui.md).
  using LayoutKey = std::tuple<size_t, int, bool, bool, size_t>;
  static constexpr size_t kMaxLayouts = 8;
  std::map<LayoutKey, std::shared_ptr<const CachedLayout>> layouts_;
  std::deque<LayoutKey> layoutOrder_;
  std::vector<std::shared_ptr<CachedLayout>> layoutPool_;
  bool warmPending_ = false;
  std::shared_ptr<const CachedLayout> computeLayout(const LayoutKey& key, const std::vector<char>& addedNow);
  std::vector<layout::LayoutNode> layoutNodes(CachedLayout& L, const std::vector<char>& hidden, const std::vector<int32_t>& folded,
                                              const std::vector<char>& addedNow);
  void storeLayout(const LayoutKey& key, const std::shared_ptr<CachedLayout>& L);
  void showLayout(std::shared_ptr<const CachedLayout> lay, std::vector<char> addedNow);
  void dropLayouts();
  void recycle(std::shared_ptr<const CachedLayout> l);
  void warmLayoutPool(const CachedLayout& like);
  void fillLayoutPool(size_t nodes, size_t shown, size_t edges);
};

}  // namespace triescope::gui
