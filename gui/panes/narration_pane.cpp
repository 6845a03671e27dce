#include "gui/panes/narration_pane.h"

#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <QTextBrowser>
#include <QTextDocument>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

#include "core/common/error.h"

namespace triescope::gui {

namespace {
constexpr double kFigureWidth = 720;  // the exported figure's text width (px)
// Tight paragraphs: a short dock shows most of a step's sentences.
const QString kSentenceStyle = QStringLiteral("p { margin-top: 0px; margin-bottom: 5px; }");
// At most this many record bytes are replayed on the UI thread for a step's
// tree before (a few ms of parsing); more waits for the user to rest.
constexpr uint64_t kSyncReplayBytes = 1u << 20;
constexpr int kRestMs = 150;

}

NarrationPane::NarrationPane(TraceContext& ctx, QWidget* parent) : QWidget(parent), ContextViewer(ctx) {
  browser_ = new QTextBrowser(this);
  browser_->setOpenLinks(false);  // node:ID anchors select, they do not navigate
  browser_->setOpenExternalLinks(false);
  browser_->document()->setDefaultStyleSheet(kSentenceStyle);
  browser_->setPlaceholderText(tr("Open a trace: each step is told here in a few sentences."));
  connect(browser_, &QTextBrowser::anchorClicked, this, &NarrationPane::linkClicked);
  deferred_ = new QTimer(this);
  deferred_->setSingleShot(true);
  deferred_->setInterval(kRestMs);
  connect(deferred_, &QTimer::timeout, this, &NarrationPane::replayDeferred);
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(2, 2, 2, 2);
  l->addWidget(browser_);
  watchContext();
}

QString NarrationPane::nodeHref(int32_t node) { return QStringLiteral("node:%1").arg(node); }

void NarrationPane::linkClicked(const QUrl& url) {
  if (url.scheme() != QLatin1String("node")) return;
  bool ok = false;
  const int32_t id = url.path().toInt(&ok);
  if (ok && ctx_.loaded() && id >= 0 && static_cast<size_t>(id) < ctx_.view().nodes.size()) ctx_.selectNode(id);
}

void NarrationPane::onTraceLoaded(TraceContext&) {
  kept_.clear();
  doc_ = nullptr;
  deferred_->stop();
  deferredStep_ = -1;
}

const TreeBefore* NarrationPane::beforeOf(const StepView& view, const TraceReplay& replay) {
  const int32_t prev = narration_previous_step(replay, view.step);
  if (prev < 0) return nullptr;  // the first step: step_narration knows the tree was empty
  for (auto it = kept_.begin(); it != kept_.end(); ++it)
    if (it->step == prev) {
      kept_.splice(kept_.begin(), kept_, it);
      return &kept_.front();
    }
  if (replay.replay_bytes(prev) > kSyncReplayBytes) {
    deferredStep_ = prev;
    deferred_->start();  // restarted by every step: only a step the user rests on is replayed
    return nullptr;
  }
  // A jump: one replay of the step before (a keyframe and the records after it).
  kept_.push_front(tree_before(replay.at(prev)));
  if (kept_.size() > kKeptTrees) kept_.pop_back();
  return &kept_.front();
}

void NarrationPane::replayDeferred() {
  const TraceDocument* doc = ctx_.loaded() ? ctx_.shownDoc() : nullptr;
  if (!doc || doc != doc_ || deferredStep_ != narration_previous_step(*doc->replay, ctx_.step())) return;
  try {
    kept_.push_front(tree_before(doc->replay->at(deferredStep_)));
    if (kept_.size() > kKeptTrees) kept_.pop_back();
  } catch (const Error&) {
    return;  // the step before is malformed: the narration already says what it can
  }
  deferredStep_ = -1;
  onStepChanged(ctx_);
}

void NarrationPane::onStepChanged(TraceContext& ctx) {
  sentences_.clear();
  error_.clear();
  const TraceDocument* doc = ctx.loaded() ? ctx.shownDoc() : nullptr;
  if (!doc) {
    render();
    return;
  }
  if (doc != doc_) {  // another trace, or the other side in diff mode: its own trees
    kept_.clear();
    doc_ = doc;
  }
  const StepView& v = ctx.view();
  deferredStep_ = -1;
  try {
    sentences_ = step_narration(v, *doc->replay, beforeOf(v, *doc->replay));
  } catch (const Error& e) {
    error_ = QString::fromStdString(e.what());  // a malformed earlier record: the context reports it too
  }
  // This step's tree is the next step's "before".
  if (std::none_of(kept_.begin(), kept_.end(), [&](const TreeBefore& t) { return t.step == v.step; })) {
    kept_.push_front(tree_before(v));
    if (kept_.size() > kKeptTrees) kept_.pop_back();
  }
  render();
}

void NarrationPane::onSelectionChanged(TraceContext&) { render(); }

QString NarrationPane::html(int32_t selected, bool links) const {
  QString h;
  if (!error_.isEmpty()) h += QStringLiteral("<p style='color:#a00000'>%1</p>").arg(error_.toHtmlEscaped());
  for (size_t i = 0; i < sentences_.size(); ++i) {
    h += i == 0 ? QStringLiteral("<p><b>") : QStringLiteral("<p>");
    for (const NarrationSegment& g : sentences_[i].segments) {
      const QString t = QString::fromStdString(g.text).toHtmlEscaped();
      if (g.node < 0 || !links) {
        h += t;
        continue;
      }
      // The selected node stands out wherever the narration names it.
      const QString style = g.node == selected ? QStringLiteral(" style='background-color:#cfe3ff; font-weight:bold'") : QString();
      h += QStringLiteral("<a href='%1'%2>%3</a>").arg(nodeHref(g.node), style, t);
    }
    h += i == 0 ? QStringLiteral("</b></p>") : QStringLiteral("</p>");
  }
  if (deferredStep_ >= 0 && links)
    h += QStringLiteral("<p><i>%1</i></p>").arg(tr("Which beams dropped out and whose slots were freed: replaying step %1\u2026").arg(deferredStep_));
  return h;
}

void NarrationPane::render() {
  const int scroll = browser_->verticalScrollBar() ? browser_->verticalScrollBar()->value() : 0;
  browser_->setHtml(html(ctx_.loaded() ? ctx_.selectedNode() : -1, true));
  if (browser_->verticalScrollBar()) browser_->verticalScrollBar()->setValue(scroll);
}

void NarrationPane::figureDocument(QTextDocument& d) const {
  d.setDefaultFont(font());
  d.setDefaultStyleSheet(kSentenceStyle);
  d.setHtml(sentences_.empty() && error_.isEmpty() ? tr("step %1: nothing to narrate").arg(ctx_.step()) : html(-1, true));
  d.setTextWidth(kFigureWidth);
}

QSizeF NarrationPane::figureSize() const {
  QTextDocument d;
  figureDocument(d);
  return {kFigureWidth, std::max(24.0, d.size().height())};
}

void NarrationPane::paintFigure(QPainter& p) const {
  QTextDocument d;
  figureDocument(d);
  d.drawContents(&p, QRectF(QPointF(0, 0), d.size()));
}

}  // namespace triescope::gui
