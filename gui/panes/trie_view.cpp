#include "gui/panes/trie_view.h"

#include "core/decode/algorithm.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QStyleOptionGraphicsItem>
#include <QTimer>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <array>
#include <algorithm>
#include <cmath>
#include <limits>

#include "gui/step_colors.h"
#include "gui/widgets/status_text.h"

namespace triescope::gui {

struct TrieView::CachedLayout {
  std::vector<int32_t> ids;       // [shown] node id of each box
  std::vector<int32_t> index_of;  // [nodes] box index, -1 when collapsed away
  std::vector<QRectF> boxes;      // [shown]
  std::vector<QString> line1, line2;
  std::vector<std::array<QPointF, 4>> edges;  // [edges] one cubic per edge (dot's multi-piece splines are kept in `edgePaths`)
  std::vector<QRectF> edgeBounds;             // [edges]
  QPainterPath edgePaths;                      // edges with more than one cubic piece
  QRectF bounds;
  layout::LayoutEngine engine = layout::LayoutEngine::dot;
  // Empty, with every vector's capacity kept for the next layout.
  void clear() {
    ids.clear();
    index_of.clear();
    boxes.clear();
    line1.clear();
    line2.clear();
    edges.clear();
    edgeBounds.clear();
    edgePaths.clear();
    bounds = QRectF();
    engine = layout::LayoutEngine::dot;
  }
};

// One item draws the whole tree: thousands of QGraphicsItems cost more to
// create per step than the drawing itself (docs/benchmarks-gui.md).
class TreeItem final : public QGraphicsItem {
 public:
  explicit TreeItem(TrieView* owner) : owner_(owner) {
    setFlag(ItemUsesExtendedStyleOption);
    setAcceptHoverEvents(true);
  }
  std::shared_ptr<const TrieView::CachedLayout> lay;
  const StepView* view = nullptr;
  const StepMarks* marks = nullptr;
  std::vector<char> added;  // [nodes]
  int32_t selected = -1;
  std::vector<int32_t> path;  // the highlighted mask cell's tree path (query ... key)
  std::vector<char> onPath;   // [nodes] 1 on `path`
  void setPath(const std::vector<int32_t>& p) {
    path = p;
    onPath.clear();
    for (int32_t id : p)
      if (id >= 0) {
        if (static_cast<size_t>(id) >= onPath.size()) onPath.resize(static_cast<size_t>(id) + 1, 0);
        onPath[static_cast<size_t>(id)] = 1;
      }
  }
  bool gcAfterForward = false;  // this step compacts the cache after its pass
  std::function<void(int32_t)> onClick;

  QRectF boundingRect() const override { return lay ? lay->bounds.adjusted(-8, -8, 8, 8) : QRectF(); }

  void geometryWillChange() { prepareGeometryChange(); }
  int32_t nodeAt(QPointF p) const {
    if (!lay) return -1;
    for (size_t i = 0; i < lay->boxes.size(); ++i)
      if (lay->boxes[i].contains(p)) return lay->ids[i];
    return -1;
  }

  void paint(QPainter* p, const QStyleOptionGraphicsItem* opt, QWidget*) override {
    if (!lay || !view) return;
    const QRectF exposed = opt->exposedRect;
    const double lod = QStyleOptionGraphicsItem::levelOfDetailFromTransform(p->worldTransform());
    p->setRenderHint(QPainter::Antialiasing, lod > 0.3);
    p->setPen(QPen(QColor(120, 120, 130), 1.2));
    p->setBrush(Qt::NoBrush);
    // Only the edges in the exposed area: stroking thousands of off-screen
    // curves dominated the repaint of big trees.
    QPainterPath vis;
    for (size_t i = 0; i < lay->edges.size(); ++i)
      if (lay->edgeBounds[i].intersects(exposed)) {
        const auto& c = lay->edges[i];
        vis.moveTo(c[0]);
        vis.cubicTo(c[1], c[2], c[3]);
      }
    p->drawPath(vis);
    p->drawPath(lay->edgePaths);
    paintPathEdges(p);
    QFont f = p->font();
    f.setPointSizeF(9);
    QFont fb = f;
    fb.setBold(true);
    const bool text = lod * 9 >= 4.5;
    for (size_t i = 0; i < lay->boxes.size(); ++i) {
      const QRectF& r = lay->boxes[i];
      if (!r.intersects(exposed)) continue;
      const int32_t id = lay->ids[i];
      const TreeNode& n = view->nodes[static_cast<size_t>(id)];
      // Faded: its KV was garbage-collected at an earlier step. A node added
      // at this step without a slot is new (not written yet, or computed in
      // this pass and compacted right after it, as lookahead does).
      const bool isAdded = static_cast<size_t>(id) < added.size() && added[static_cast<size_t>(id)];
      const bool collected = n.slot < 0 && !isAdded;
      QColor fill = status_color(n.status).lighter(n.status == NodeStatus::pruned ? 115 : 150);
      QColor border = status_color(n.status).darker(130);
      p->setOpacity(collected ? 0.4 : 1.0);
      double bw = 1.2;
      if (static_cast<size_t>(id) < added.size() && added[static_cast<size_t>(id)]) {
        border = kAddedOutline;
        bw = 3;
      }
      if (id == selected) {
        border = kSelection.darker(110);
        bw = 4;
      }
      QPen pen(border, bw);
      if (collected) pen.setStyle(Qt::DashLine);
      p->setPen(pen);
      p->setBrush(fill);
      p->drawRoundedRect(r, 5, 5);
      if (static_cast<size_t>(id) < onPath.size() && onPath[static_cast<size_t>(id)]) {
        p->setPen(QPen(kCellHighlight, 3.5));
        p->setBrush(Qt::NoBrush);
        p->drawRoundedRect(r.adjusted(-3, -3, 3, 3), 7, 7);
      }
      if (marks && marks->nodes.count(id)) {
        p->setPen(QPen(kDiffMark, 3, Qt::DotLine));
        p->setBrush(Qt::NoBrush);
        p->drawRoundedRect(r.adjusted(-4, -4, 4, 4), 7, 7);
      }
      if (text) {
        p->setPen(Qt::black);
        p->setFont(fb);
        p->drawText(QRectF(r.left(), r.top() + 2, r.width(), r.height() / 2), Qt::AlignCenter, lay->line1[i]);
        p->setFont(f);
        p->setPen(QColor(60, 60, 60));
        p->drawText(QRectF(r.left(), r.center().y(), r.width(), r.height() / 2 - 2), Qt::AlignCenter, lay->line2[i]);
      }
    }
    p->setOpacity(1.0);
  }

  // The highlighted path's edges, parent box to child box, under the boxes.
  void paintPathEdges(QPainter* p) const {
    if (path.size() < 2) return;
    auto box = [&](int32_t id) -> const QRectF* {
      if (id < 0 || static_cast<size_t>(id) >= lay->index_of.size() || lay->index_of[static_cast<size_t>(id)] < 0) return nullptr;
      return &lay->boxes[static_cast<size_t>(lay->index_of[static_cast<size_t>(id)])];
    };
    p->save();
    p->setPen(QPen(kCellHighlight, 5, Qt::SolidLine, Qt::RoundCap));
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const QRectF* a = box(path[i]);
      const QRectF* b = box(path[i + 1]);
      if (!a || !b) continue;
      const bool aAbove = a->center().y() < b->center().y();
      const QRectF& up = aAbove ? *a : *b;
      const QRectF& down = aAbove ? *b : *a;
      p->drawLine(QPointF(up.center().x(), up.bottom()), QPointF(down.center().x(), down.top()));
    }
    p->restore();
  }

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* e) override {
    if (e->button() == Qt::LeftButton && onClick) onClick(nodeAt(e->pos()));
    e->accept();
  }
  void hoverMoveEvent(QGraphicsSceneHoverEvent* e) override {
    const int32_t id = nodeAt(e->pos());
    if (id < 0 || !view) {
      setToolTip({});
      return;
    }
    const TreeNode& n = view->nodes[static_cast<size_t>(id)];
    setToolTip(QStringLiteral("node %1  token %2\ndepth (position id) %3\nKV slot %4\ncumulative logprob %5\nstatus %6%7")
                   .arg(id)
                   .arg(n.token)
                   .arg(n.depth)
                   .arg(n.slot >= 0 ? QString::number(n.slot)
                        : static_cast<size_t>(id) < added.size() && added[static_cast<size_t>(id)]
                            ? (gcAfterForward ? QStringLiteral("none (computed in this pass, collected right after it)")
                                              : QStringLiteral("none yet (written when it is fed)"))
                            : QStringLiteral("none (collected)"))
                   .arg(n.logprob, 0, 'f', 4)
                   .arg(status_text(n.status))
                   .arg(static_cast<size_t>(id) < added.size() && added[static_cast<size_t>(id)] ? QStringLiteral("\nadded at this step")
                                                                                                : QString()));
  }

 private:
  TrieView* owner_;
};

namespace {
class ZoomView final : public QGraphicsView {
 public:
  using QGraphicsView::QGraphicsView;

 protected:
  void wheelEvent(QWheelEvent* e) override {
    if (e->modifiers() & Qt::ControlModifier || true) {
      const double s = std::pow(1.0015, e->angleDelta().y());
      scale(s, s);
      e->accept();
    }
  }
};
}  // namespace

TrieView::TrieView(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  // Opaque: a repaint of this pane does not repaint the main window under it.
  setAutoFillBackground(true);
  scene_ = new QGraphicsScene(this);
  // One item draws the whole tree: a BSP index only costs a rebuild per step.
  scene_->setItemIndexMethod(QGraphicsScene::NoIndex);
  view_ = new ZoomView(scene_, this);
  view_->setAutoFillBackground(true);  // opaque frame: no TrieView repaint under it
  view_->setDragMode(QGraphicsView::ScrollHandDrag);
  view_->setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setBackgroundBrush(QColor(252, 252, 250));
  // Every step repaints the whole viewport anyway (the one tree item
  // changes), so a scroll (Follow, panning) repaints it too instead of
  // scrolling the window's backing store: under X that scroll made the next
  // frame 30-40 ms (the step after Follow's first scroll; docs/benchmarks-gui.md).
  view_->setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
  item_ = new TreeItem(this);
  item_->onClick = [this](int32_t id) { clicked(id); };
  scene_->addItem(item_);

  auto* bar = new QHBoxLayout;
  collapseBox_ = new QCheckBox(tr("Collapse prompt"), this);
  collapseBox_->setChecked(collapse_);
  connect(collapseBox_, &QCheckBox::toggled, this, &TrieView::setCollapsePrompt);
  hideBox_ = new QCheckBox(tr("Hide collected"), this);
  hideBox_->setToolTip(tr("Hide nodes whose KV slot was garbage-collected (dead branches)"));
  connect(hideBox_, &QCheckBox::toggled, this, &TrieView::setHideCollected);
  followBox_ = new QCheckBox(tr("Follow"), this);
  followBox_->setToolTip(tr("Scroll to the nodes added at each step"));
  followBox_->setChecked(follow_);
  connect(followBox_, &QCheckBox::toggled, this, &TrieView::setFollow);
  auto* fitBtn = new QPushButton(tr("Fit"), this);
  fitBtn->setToolTip(tr("Fit the tree in the view (F)"));
  connect(fitBtn, &QPushButton::clicked, this, &TrieView::fit);
  auto* zin = new QPushButton(QStringLiteral("+"), this);
  auto* zout = new QPushButton(QStringLiteral("\u2212"), this);
  zin->setFixedWidth(28);
  zout->setFixedWidth(28);
  connect(zin, &QPushButton::clicked, this, [this] { view_->scale(1.25, 1.25); });
  connect(zout, &QPushButton::clicked, this, [this] { view_->scale(0.8, 0.8); });
  info_ = new StatusText(this, 200);
  bar->addWidget(collapseBox_);
  bar->addWidget(hideBox_);
  bar->addWidget(followBox_);
  bar->addWidget(fitBtn);
  bar->addWidget(zin);
  bar->addWidget(zout);
  bar->addSpacing(12);
  bar->addWidget(info_, 1);
  auto* legendRow = new QHBoxLayout;
  // Legend: the same colours the nodes use.
  auto swatch = [&](const QColor& c, const QString& t, bool outline = false) {
    auto* l = new QLabel(this);
    l->setText(QStringLiteral("<span style='background:%1;border:1px solid #555'>&nbsp;&nbsp;&nbsp;</span> %2")
                   .arg(outline ? QStringLiteral("#fff") : c.name(), t));
    if (outline) l->setText(QStringLiteral("<span style='color:%1;font-weight:bold'>&#9633;</span> %2").arg(c.name(), t));
    legendRow->addWidget(l);
  };
  for (NodeStatus s : {NodeStatus::live, NodeStatus::pruned, NodeStatus::finished, NodeStatus::accepted, NodeStatus::rejected})
    swatch(status_color(s).lighter(150), status_text(s));
  swatch(kAddedOutline, tr("added this step"), true);
  swatch(kSelection, tr("selected"), true);
  auto* faded = new QLabel(tr("<span style='color:#999'>faded = KV collected</span>"), this);
  legendRow->addWidget(faded);
  legendRow->addStretch(1);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  lay->addLayout(bar);
  lay->addLayout(legendRow);
  lay->addWidget(view_, 1);
  watchContext();
}

void TrieView::dropLayouts() {
  for (auto& [k, l] : layouts_) recycle(std::move(l));
  layouts_.clear();
  layoutOrder_.clear();
}

void TrieView::recycle(std::shared_ptr<const CachedLayout> l) {
  // Only a layout nobody else holds (the shown one is held by the item).
  if (l && l.use_count() == 1 && layoutPool_.size() < kMaxLayouts) {
    auto m = std::const_pointer_cast<CachedLayout>(std::move(l));
    m->clear();
    layoutPool_.push_back(std::move(m));
  }
}

void TrieView::warmLayoutPool(const CachedLayout& like) {
  // Room for the loaded tree plus growth, written once so the pages are
  // faulted in at load, not on the first key presses. After the first
  // paint (a zero timer): 23-26 ms for a 5,000-node tree here.
  const size_t n = like.index_of.size() + like.index_of.size() / 4 + 64, shown = like.ids.size() + like.ids.size() / 4 + 64,
               edges = like.edges.size() + like.edges.size() / 4 + 64;
  QTimer::singleShot(0, this, [this, n, shown, edges] { fillLayoutPool(n, shown, edges); });
}

void TrieView::fillLayoutPool(size_t n, size_t shown, size_t edges) {
  while (layoutPool_.size() < kMaxLayouts) {
    auto m = std::make_shared<CachedLayout>();
    m->index_of.resize(n);
    m->ids.resize(shown);
    m->boxes.resize(shown);
    m->line1.resize(shown);
    m->line2.resize(shown);
    m->edges.resize(edges);
    m->edgeBounds.resize(edges);
    m->clear();
    layoutPool_.push_back(std::move(m));
  }
}

void TrieView::onTraceLoaded(TraceContext& ctx) {
  dropLayouts();
  warmPending_ = true;
  labels_.clear();
  fitPending_ = true;
  // Lookahead compacts after every pass: the dead guesses of all earlier
  // passes would bury the current one. Start with them hidden (toggle back).
  if (ctx.doc()->stats.any_gc_after_forward()) setHideCollected(true);
}

void TrieView::onStepChanged(TraceContext&) { rebuild(); }

void TrieView::onSelectionChanged(TraceContext& ctx) {
  item_->selected = ctx.selectedNode();
  item_->update();
  const QPointF p = nodeScenePos(ctx.selectedNode());
  if (!std::isnan(p.x())) view_->ensureVisible(QRectF(p - QPointF(40, 20), QSizeF(80, 40)), 20, 20);
}

void TrieView::onHighlightChanged(TraceContext& ctx) {
  item_->setPath(ctx.highlight().path);
  item_->update();
}

std::vector<int32_t> TrieView::highlightedNodes() const {
  std::vector<int32_t> out;
  const auto& l = item_->lay;
  for (int32_t id : item_->path)
    if (l && id >= 0 && static_cast<size_t>(id) < l->index_of.size() && l->index_of[static_cast<size_t>(id)] >= 0) out.push_back(id);
  return out;
}

void TrieView::setCollapsePrompt(bool on) {
  if (on == collapse_) return;
  collapse_ = on;
  collapseBox_->setChecked(on);
  rebuild();
  fit();
}

void TrieView::setHideCollected(bool on) {
  if (on == hideCollected_) return;
  hideCollected_ = on;
  hideBox_->setChecked(on);
  rebuild();
}

void TrieView::setFollow(bool on) {
  follow_ = on;
  followBox_->setChecked(on);
  if (on) followAdded();
}

void TrieView::fit() {
  if (item_->lay) view_->fitInView(item_->boundingRect(), Qt::KeepAspectRatio);
  // Never blow a tiny tree up past 1.6x; labels get blurry and it looks odd.
  if (view_->transform().m11() > 1.6) view_->setTransform(QTransform::fromScale(1.6, 1.6));
  fitPending_ = false;
}

void TrieView::followAdded() {
  const auto& l = item_->lay;
  if (!l) return;
  QRectF box;
  for (size_t id = 0; id < item_->added.size(); ++id)
    if (item_->added[id] && l->index_of[id] >= 0) box |= l->boxes[static_cast<size_t>(l->index_of[id])];
  if (box.isNull()) return;
  box.adjust(-40, -60, 40, 20);  // some context: the parents above
  const QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  if (visible.contains(box)) return;
  // Zoom out only as far as needed for the new nodes to fit, never below
  // the scale at which labels are still drawn.
  const double s = view_->transform().m11();
  const double need = std::min(view_->viewport()->width() / box.width(), view_->viewport()->height() / box.height());
  if (need < s) view_->setTransform(QTransform::fromScale(std::max(need, 0.5), std::max(need, 0.5)));
  view_->centerOn(box.center());
}

int TrieView::shownNodeCount() const { return item_->lay ? static_cast<int>(item_->lay->ids.size()) : 0; }

QPointF TrieView::nodeScenePos(int32_t node) const {
  const auto& l = item_->lay;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (!l || node < 0 || static_cast<size_t>(node) >= l->index_of.size() || l->index_of[static_cast<size_t>(node)] < 0) return {nan, nan};
  return l->boxes[static_cast<size_t>(l->index_of[static_cast<size_t>(node)])].center();
}

int32_t TrieView::nodeAtScenePos(QPointF p) const { return item_->nodeAt(p); }

void TrieView::clicked(int32_t node) { ctx_.selectNode(node); }

namespace {

// [nodes] 1 for the nodes this step added.
std::vector<char> added_mask(const StepView& v) {
  const size_t n = v.nodes.size();
  std::vector<char> addedNow(n, 0);
  for (int32_t a : v.added)
    if (a >= 0 && static_cast<size_t>(a) < n) addedNow[static_cast<size_t>(a)] = 1;
  return addedNow;
}

// Collapse each root chain (the prompt): nodes with exactly one child, from
// a root down, up to fold_limit - 1 (0: none), fold into the node below. hidden[nodes]:
// folded away; folded[nodes]: how many nodes fold into this one.
void prompt_folds(const StepView& v, int32_t fold_limit, std::vector<char>& hidden, std::vector<int32_t>& folded) {
  const size_t n = v.nodes.size();
  hidden.assign(n, 0);
  folded.assign(n, 0);
  std::vector<int32_t> nchild(n, 0), first_child(n, -1);
  for (const auto& nd : v.nodes)
    if (nd.id >= 0 && nd.parent >= 0 && static_cast<size_t>(nd.parent) < n) ++nchild[static_cast<size_t>(nd.parent)];
  for (size_t i = 0; i < n; ++i) {
    const int32_t p = v.nodes[i].parent;
    if (v.nodes[i].id >= 0 && p >= 0 && static_cast<size_t>(p) < n && first_child[static_cast<size_t>(p)] < 0)
      first_child[static_cast<size_t>(p)] = static_cast<int32_t>(i);
  }
  for (size_t i = 0; i < n; ++i) {
    if (v.nodes[i].id < 0 || v.nodes[i].parent >= 0) continue;
    std::vector<int32_t> chain;
    int32_t cur = static_cast<int32_t>(i);
    while (nchild[static_cast<size_t>(cur)] == 1 && static_cast<int32_t>(chain.size()) + 1 < fold_limit) {
      chain.push_back(cur);
      cur = first_child[static_cast<size_t>(cur)];
    }
    if (chain.size() < 2) continue;
    for (int32_t c : chain) hidden[static_cast<size_t>(c)] = 1;
    folded[static_cast<size_t>(cur)] = static_cast<int32_t>(chain.size());
  }
}

// The layout's boxes (centred on the layout's points) and edges in scene
// coordinates.
void layout_to_scene(TrieView::CachedLayout& L, const std::vector<layout::LayoutNode>& in, const layout::LayoutResult& r) {
  L.boxes.reserve(in.size());
  L.edges.reserve(r.edges.size());
  L.edgeBounds.reserve(r.edges.size());
  L.engine = r.engine;
  for (size_t i = 0; i < in.size(); ++i)
    L.boxes.emplace_back(r.centers[i].x - in[i].width / 2, r.centers[i].y - in[i].height / 2, in[i].width, in[i].height);
  for (const auto& e : r.edges) {
    if (e.spline.size() < 4) continue;
    auto P = [&](size_t k) { return QPointF(e.spline[k].x, e.spline[k].y); };
    if (e.spline.size() == 4) {
      L.edges.push_back({P(0), P(1), P(2), P(3)});
      // Widened: a straight vertical edge has a zero-width box, which never "intersects".
      L.edgeBounds.push_back(QPolygonF({P(0), P(1), P(2), P(3)}).boundingRect().adjusted(-2, -2, 2, 2));
      continue;
    }
    L.edgePaths.moveTo(P(0));
    for (size_t k = 1; k + 2 < e.spline.size(); k += 3) L.edgePaths.cubicTo(P(k), P(k + 1), P(k + 2));
  }
  L.bounds = QRectF(0, 0, std::max(r.width, 1.0), std::max(r.height, 1.0));
}

}  // namespace

void TrieView::rebuild() {
  if (!ctx_.loaded()) return;
  const StepView& v = ctx_.view();
  std::vector<char> addedNow = added_mask(v);
  size_t collected = 0;
  for (size_t i = 0; i < v.nodes.size(); ++i) collected += v.nodes[i].slot < 0 && !addedNow[i];
  const auto key = std::make_tuple(v.nodes.size(), int(ctx_.shownSide()), collapse_, hideCollected_, hideCollected_ ? collected : 0);
  std::shared_ptr<const CachedLayout> lay;
  if (auto it = layouts_.find(key); it != layouts_.end()) lay = it->second;
  if (!lay) lay = computeLayout(key, addedNow);
  showLayout(std::move(lay), std::move(addedNow));
}

std::shared_ptr<const TrieView::CachedLayout> TrieView::computeLayout(const LayoutKey& key, const std::vector<char>& addedNow) {
  std::shared_ptr<CachedLayout> L;
  if (!layoutPool_.empty()) {
    L = std::move(layoutPool_.back());
    layoutPool_.pop_back();
  } else {
    L = std::make_shared<CachedLayout>();
  }
  std::vector<char> hidden;
  std::vector<int32_t> folded;
  prompt_folds(ctx_.view(), collapse_ ? std::max(ctx_.shownDoc()->prompt_len, 3) : 0, hidden, folded);
  const std::vector<layout::LayoutNode> in = layoutNodes(*L, hidden, folded, addedNow);
  layout::LayoutOptions opt;
  opt.max_dot_nodes = max_dot_;
  layout_to_scene(*L, in, layout::tree_layout(in, opt));
  storeLayout(key, L);
  return L;
}

// The shown nodes in layout order with their labels and box sizes; fills
// L's ids, index_of and label lines.
std::vector<layout::LayoutNode> TrieView::layoutNodes(CachedLayout& L, const std::vector<char>& hidden, const std::vector<int32_t>& folded,
                                                      const std::vector<char>& addedNow) {
  const StepView& v = ctx_.view();
  const TraceDocument* doc = ctx_.shownDoc();
  const size_t n = v.nodes.size();
  // Node logprobs are scores unless the registry says the algorithm draws
  // tokens unscored; an algorithm this build does not know is taken as scored.
  const AlgorithmSpec* spec = algorithm_find(doc->algorithm());
  const bool scoreless = spec && !spec->scored;
  QFont f;
  f.setPointSizeF(9);
  QFont fb = f;
  fb.setBold(true);
  const QFontMetricsF fm(f), fmb(fb);
  std::vector<layout::LayoutNode> in;
  in.reserve(n);
  L.index_of.assign(n, -1);
  // Sized once: growing these per push showed up in the cold step's profile.
  L.ids.reserve(n);
  L.line1.reserve(n);
  L.line2.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& nd = v.nodes[i];
    if (nd.id < 0 || hidden[i]) continue;
    // Collected nodes have no live descendants (GC keeps the ancestors of
    // live nodes), so hiding them removes whole dead subtrees.
    if (hideCollected_ && nd.slot < 0 && !addedNow[i]) continue;
    int32_t parent = nd.parent;
    if (labels_.size() < n) {
      // Room to grow: a trace adds nodes every step, and a reallocation of
      // this vector at the first steps cost ~60 page faults each.
      if (labels_.capacity() < n) labels_.reserve(n + n / 4 + 64);
      labels_.resize(n);
    }
    NodeLabel& lab = labels_[i];
    if (lab.width < 0) {
      lab.line1 = token_label(*doc->replay, nd.token);
      // Greedy decoders record no scores (all 0): the node id says more.
      lab.line2 = scoreless ? QStringLiteral("#%1").arg(nd.id) : QString::number(nd.logprob, 'f', 2);
      lab.width = std::clamp(std::max(fmb.horizontalAdvance(lab.line1), fm.horizontalAdvance(lab.line2)) + 14.0, 36.0, 150.0);
    }
    QString l1 = lab.line1, l2 = lab.line2;
    double w = lab.width;
    if (folded[i] > 0) {
      parent = -1;
      l1 = QChar(0x2026) + l1;
      l2 = tr("↑ %1 more tokens").arg(folded[i]);
      w = std::clamp(std::max(fmb.horizontalAdvance(l1), fm.horizontalAdvance(l2)) + 14.0, 36.0, 150.0);
    }
    // A parent that is not drawn (hidden, or missing from a malformed
    // trace) makes this node a root rather than failing the layout.
    if (parent >= 0 && (static_cast<size_t>(parent) >= n || L.index_of[static_cast<size_t>(parent)] < 0)) parent = -1;
    L.index_of[i] = static_cast<int32_t>(in.size());
    L.ids.push_back(nd.id);
    L.line1.push_back(l1);
    L.line2.push_back(l2);
    in.push_back({nd.id, parent, w, fm.height() * 2 + 8});
  }
  return in;
}

// Caches a new layout, evicting the oldest beyond kMaxLayouts into the pool.
void TrieView::storeLayout(const LayoutKey& key, const std::shared_ptr<CachedLayout>& L) {
  while (layouts_.size() >= kMaxLayouts && !layoutOrder_.empty()) {
    auto it = layouts_.find(layoutOrder_.front());
    layoutOrder_.pop_front();
    if (it == layouts_.end()) continue;
    std::shared_ptr<const CachedLayout> old = std::move(it->second);
    layouts_.erase(it);
    recycle(std::move(old));
  }
  layouts_[key] = L;
  layoutOrder_.push_back(key);
  if (warmPending_) {
    warmPending_ = false;
    warmLayoutPool(*L);
  }
}

// Puts a layout on screen with this step's marks, selection and status line.
void TrieView::showLayout(std::shared_ptr<const CachedLayout> lay, std::vector<char> addedNow) {
  const StepView& v = ctx_.view();
  const TraceDocument* doc = ctx_.shownDoc();
  item_->geometryWillChange();
  item_->lay = lay;
  item_->view = &v;
  item_->marks = ctx_.diffMode() ? &ctx_.marks() : nullptr;
  item_->added = std::move(addedNow);
  {
    const int32_t si = doc->step_index(v.step);
    item_->gcAfterForward = si >= 0 && static_cast<size_t>(si) < doc->stats.size() && doc->stats[static_cast<size_t>(si)].gc_after_forward;
  }
  item_->selected = ctx_.selectedNode();
  item_->setPath(ctx_.highlight().path);
  engine_ = lay->engine;
  scene_->setSceneRect(item_->boundingRect());
  item_->update();
  info_->setText(tr("%1 nodes (%2 shown), layout: %3").arg(v.nodes.size()).arg(lay->ids.size()).arg(layout::layout_engine_name(lay->engine)));
  if (fitPending_) {
    fit();
    // A big tree fitted whole is unreadable: start at a scale with labels.
    if (view_->transform().m11() < 0.5) view_->setTransform(QTransform::fromScale(0.5, 0.5));
  }
  if (follow_) followAdded();
}

}  // namespace triescope::gui
