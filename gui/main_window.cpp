#include "gui/main_window.h"

#include "core/decode/algorithm.h"

#include <algorithm>

#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTimer>
#include <QElapsedTimer>
#include <QScopeGuard>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include <iostream>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "gui/export/figure_export.h"
#include "gui/export/mask_figure.h"
#include "gui/export/pane_figures.h"
#include "gui/panes/beams_pane.h"
#include "gui/panes/constraint_view.h"
#include "gui/panes/narration_pane.h"
#include "gui/panes/diff_pane.h"
#include "gui/panes/json_pane.h"
#include "gui/panes/kv_view.h"
#include "gui/panes/mask_view.h"
#include "gui/panes/plots_pane.h"
#include "gui/panes/trie_view.h"
#include "gui/panes/verify_pane.h"
#include "gui/start_page.h"
#include "gui/step_colors.h"
#include "gui/timeline.h"
#include "gui/widgets/status_text.h"

namespace triescope::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("TrieScope"));
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  auto* central = new QWidget(this);
  central->setAutoFillBackground(true);  // opaque: see TrieView
  auto* cl = new QVBoxLayout(central);
  cl->setContentsMargins(0, 0, 0, 0);
  timeline_ = new Timeline(ctx_, central);
  trie_ = new TrieView(ctx_, central);
  cl->addWidget(timeline_);
  cl->addWidget(trie_, 1);
  setCentralWidget(central);

  auto dock = [this](const QString& title, QWidget* w, Qt::DockWidgetArea area, const char* name) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(QString::fromLatin1(name));
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  mask_ = new MaskView(ctx_, this);
  kv_ = new KvView(ctx_, this);
  plots_ = new PlotsPane(ctx_, this);
  beams_ = new BeamsPane(ctx_, this);
  narration_ = new NarrationPane(ctx_, this);
  constraintView_ = new ConstraintView(ctx_, this);
  constraint_ = constraintView_->rawPane();
  verify_ = new VerifyPane(ctx_, this);
  diff_ = new DiffPane(ctx_, this);
  auto* dMask = dock(tr("Attention mask + position ids"), mask_, Qt::RightDockWidgetArea, "mask");
  auto* dKv = dock(tr("KV cache"), kv_, Qt::BottomDockWidgetArea, "kv");
  auto* dPlots = dock(tr("Plots"), plots_, Qt::BottomDockWidgetArea, "plots");
  auto* dBeams = dock(tr("Chosen beams"), beams_, Qt::RightDockWidgetArea, "beams");
  auto* dNarr = dock(tr("Narration"), narration_, Qt::RightDockWidgetArea, "narration");
  auto* dCons = dock(tr("Constraint"), constraintView_, Qt::RightDockWidgetArea, "constraint");
  auto* dVer = dock(tr("Verification"), verify_, Qt::RightDockWidgetArea, "verify");
  auto* dDiff = dock(tr("Diff"), diff_, Qt::RightDockWidgetArea, "diff");
  splitDockWidget(dMask, dBeams, Qt::Vertical);
  tabifyDockWidget(dBeams, dCons);
  tabifyDockWidget(dCons, dVer);
  tabifyDockWidget(dVer, dDiff);
  dBeams->raise();
  // The step in words beside the KV cache: on screen whichever pane (constraint,
  // verification, diff) a trace brings to the front on the right.
  splitDockWidget(dKv, dNarr, Qt::Horizontal);
  tabifyDockWidget(dNarr, dPlots);
  dNarr->raise();
  resizeDocks({dMask, dBeams}, {560, 200}, Qt::Vertical);
  resizeDocks({dMask}, {640}, Qt::Horizontal);
  resizeDocks({dKv}, {300}, Qt::Vertical);
  resizeDocks({dKv, dNarr}, {800, 700}, Qt::Horizontal);
  docks_ = {dMask, dKv, dPlots, dBeams, dNarr, dCons, dVer, dDiff};

  status_ = new StatusText(this, 400);
  status_->setText(tr("Open a trace: File > Open, drag a .jsonl here, or run a sample."));
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);  // busy: trace_read has no byte progress
  progress_->setMaximumWidth(160);
  progress_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  buildMenus();
  ctx_.addViewer(this);
  connect(&ctx_, &TraceContext::errorOccurred, this, [this](const QString& m) { showError(tr("Cannot replay this step"), m); });
  // Panes in hidden dock tabs skip their widget updates until shown.
  connect(dVer, &QDockWidget::visibilityChanged, verify_, &VerifyPane::setOnScreen);
  connect(dCons, &QDockWidget::visibilityChanged, constraintView_, &ConstraintView::setOnScreen);
  // Bring the pane that explains this kind of trace to the front.
  connect(verify_, &VerifyPane::speculativeTraceLoaded, this, [this, dVer, dMask] {
    dVer->raise();
    // The layers need the room more than a mask of a few dozen queries.
    resizeDocks({dMask, dVer}, {height() / 4, height() / 3}, Qt::Vertical);
  });
  connect(&ctx_, &TraceContext::traceLoaded, this, [this, dDiff, dCons, dMask] {
    if (ctx_.diffMode()) dDiff->raise();
    else if (constraint_->traceHasData()) {
      dCons->raise();
      // The prefix tree and the CSR rows need the height more than a mask of a few beams.
      resizeDocks({dMask, dCons}, {height() / 5, height() * 3 / 5}, Qt::Vertical);
      resizeDocks({dCons}, {width() / 2}, Qt::Horizontal);
    }
  });
}

// The panes are viewers of ctx_, a member: they must go before it does (Qt
// would delete them, as children, only after the members are destroyed).
MainWindow::~MainWindow() {
  ctx_.removeViewer(this);
  for (QDockWidget* d : docks_) delete d;
  docks_.clear();
  delete takeCentralWidget();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open trace..."), QKeySequence::Open, this, &MainWindow::openDialog);
  file->addAction(tr("Open &diff (two traces)..."), QKeySequence(tr("Ctrl+D")), this, &MainWindow::openDiffDialog);
  file->addAction(tr("&Run sample live..."), QKeySequence(tr("Ctrl+R")), this, &MainWindow::runSampleDialog);
  recentMenu_ = file->addMenu(tr("Recent files"));
  rebuildRecentMenu();
  file->addSeparator();
  QMenu* ex = file->addMenu(tr("&Export"));
  for (const QString& pane : figurePanes())
    ex->addAction(tr("%1 (SVG/PNG)...").arg(pane), this, [this, pane] { exportDialog(pane); });
  ex->addAction(tr("Current step as JSON..."), QKeySequence(tr("Ctrl+E")), this, &MainWindow::exportStepDialog);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::quit);

  QMenu* go = menuBar()->addMenu(tr("&Go"));
  go->addAction(tr("Next step"), QKeySequence(Qt::Key_Right), timeline_, &Timeline::next);
  go->addAction(tr("Previous step"), QKeySequence(Qt::Key_Left), timeline_, &Timeline::prev);
  go->addAction(tr("First step"), QKeySequence(Qt::Key_Home), timeline_, &Timeline::first);
  go->addAction(tr("Last step"), QKeySequence(Qt::Key_End), timeline_, &Timeline::last);
  go->addAction(tr("Play / pause"), QKeySequence(Qt::Key_Space), timeline_, &Timeline::togglePlay);
  go->addAction(tr("Jump to step..."), QKeySequence(tr("Ctrl+G")), timeline_, &Timeline::focusJump);
  go->addSeparator();
  go->addAction(tr("Next divergence"), QKeySequence(Qt::Key_N), diff_, &DiffPane::nextDivergence);
  go->addAction(tr("Previous divergence"), QKeySequence(tr("Shift+N")), diff_, &DiffPane::prevDivergence);
  go->addAction(tr("Show trace A / B"), QKeySequence(Qt::Key_B), this, [this] {
    ctx_.setShownSide(ctx_.shownSide() == TraceContext::A ? TraceContext::B : TraceContext::A);
  });
  go->addAction(tr("Clear selection"), QKeySequence(Qt::Key_Escape), this, [this] { ctx_.selectNode(-1); });

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("Fit tree"), QKeySequence(Qt::Key_F), trie_, &TrieView::fit);
  auto* collapse = view->addAction(tr("Collapse prompt chain"));
  collapse->setCheckable(true);
  collapse->setChecked(trie_->collapsePrompt());
  connect(collapse, &QAction::toggled, trie_, &TrieView::setCollapsePrompt);
  view->addAction(tr("Mask zoom in"), QKeySequence(tr("Ctrl+=")), this, [this] { mask_->zoomBy(1.4); });
  view->addAction(tr("Mask zoom out"), QKeySequence(tr("Ctrl+-")), this, [this] { mask_->zoomBy(1 / 1.4); });
  view->addAction(tr("Mask fit"), QKeySequence(tr("Ctrl+0")), mask_, &MaskView::fit);
  view->addSeparator();
  for (QDockWidget* d : docks_) view->addAction(d->toggleViewAction());
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings(QStringLiteral("TrieScope"), QStringLiteral("triescope-gui")).value("recent").toStringList();
  for (const QString& p : recent) recentMenu_->addAction(p, this, [this, p] { openTrace(p); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecent(const QString& path) {
  if (path.startsWith(QStringLiteral("live:"))) return;
  QSettings s(QStringLiteral("TrieScope"), QStringLiteral("triescope-gui"));
  QStringList r = s.value("recent").toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  r.removeAll(abs);
  r.prepend(abs);
  while (r.size() > 10) r.removeLast();
  s.setValue("recent", r);
  rebuildRecentMenu();
}

void MainWindow::showError(const QString& title, const QString& message) {
  if (headless_) {
    std::cerr << title.toStdString() << ": " << message.toStdString() << "\n";
    return;
  }
  QMessageBox::critical(this, title, message);
}

void MainWindow::startLoad(const QString& what, std::function<Loaded()> job) {
  loading_ = true;
  progress_->show();
  status_->setText(tr("Loading %1 ...").arg(what));
  auto* watcher = new QFutureWatcher<Loaded>(this);
  connect(watcher, &QFutureWatcher<Loaded>::finished, this, [this, watcher, what] {
    const Loaded r = watcher->result();
    watcher->deleteLater();
    loading_ = false;
    progress_->hide();
    if (!r.error.isEmpty()) {
      status_->setText(tr("Failed to load %1").arg(what));
      showError(tr("Cannot open %1").arg(what), r.error);
      Q_EMIT loadFinished(false, r.error);
      return;
    }
    const bool follow = liveRun_ && previewActive_ && ctx_.stepIndex() + 1 >= static_cast<int32_t>(ctx_.steps().size());
    if (previewActive_) ctx_.replaceTraces(r.a, r.b);
    else ctx_.setTraces(r.a, r.b);
    if (follow) ctx_.setStepIndex(static_cast<int32_t>(ctx_.steps().size()) - 1);
    previewActive_ = false;
    addRecent(QString::fromStdString(r.a->origin));
    if (!r.report.isEmpty()) std::cerr << r.report.toStdString();
    for (const TraceDocumentPtr& d : {r.a, r.b})
      if (d && !d->warning.empty()) status_->setText(tr("Warning: %1").arg(QString::fromStdString(d->warning)));
    Q_EMIT loadFinished(true, QString());
  });
  // Work that throws becomes an error string: the dialog names file and field.
  watcher->setFuture(QtConcurrent::run([job = std::move(job)]() -> Loaded {
    try {
      return job();
    } catch (const std::exception& e) {
      Loaded l;
      l.error = QString::fromStdString(e.what());
      return l;
    }
  }));
}

void MainWindow::openTrace(const QString& path) {
  liveRun_ = false;
  // Large files: parse the first records (the same core reader on a prefix)
  // and paint them at once, while the whole file loads in the background.
  previewActive_ = false;
  auto* preview = new QFutureWatcher<TraceDocumentPtr>(this);
  connect(preview, &QFutureWatcher<TraceDocumentPtr>::finished, this, [this, preview] {
    const TraceDocumentPtr d = preview->result();
    preview->deleteLater();
    if (!d || !loading_) return;  // small file, or the full load already finished / failed
    previewActive_ = true;
    ctx_.setTraces(d);
    status_->setText(tr("Showing the first %1 steps; loading the rest of %2 ...")
                         .arg(d->replay->steps().size())
                         .arg(QFileInfo(QString::fromStdString(d->origin)).fileName()));
    Q_EMIT previewShown();
  });
  preview->setFuture(QtConcurrent::run([p = path.toStdString()]() -> TraceDocumentPtr {
    try {
      return trace_document_load_preview(p);
    } catch (const std::exception&) {
      return nullptr;  // the full load reports the error
    }
  }));
  startLoad(QFileInfo(path).fileName(), [p = path.toStdString()] { return Loaded{trace_document_load(p), nullptr, {}, {}}; });
}

void MainWindow::openDiff(const QString& a, const QString& b) {
  liveRun_ = false;
  previewActive_ = false;
  startLoad(tr("%1 vs %2").arg(QFileInfo(a).fileName(), QFileInfo(b).fileName()), [pa = a.toStdString(), pb = b.toStdString()] {
    // Both files in parallel would double peak memory; the second load is
    // short next to the diff anyway.
    TraceDocumentPtr da = trace_document_load(pa);
    TraceDocumentPtr db = trace_document_load(pb);
    return Loaded{da, db, {}, {}};
  });
}

void MainWindow::runSample(const QString& samplePath, std::function<void(nlohmann::json&)> edit) {
  // Step as it decodes: a timer shows the records decoded so far (the same
  // reader on a snapshot) until the run finishes; at the last step it follows.
  auto live = std::make_shared<LiveTraceSink>();
  auto* poll = new QTimer(this);
  poll->setInterval(250);
  auto shown = std::make_shared<size_t>(0);
  const std::string origin = "live: " + samplePath.toStdString();
  connect(poll, &QTimer::timeout, this, [this, live, shown, poll, origin] {
    if (!loading_) {
      poll->deleteLater();
      return;
    }
    QElapsedTimer cost;
    cost.start();
    std::vector<nlohmann::json> recs = live->snapshot_if_grown(*shown);
    if (recs.size() < 2) return;
    // Each snapshot copies every record so far: poll less often as it grows.
    const auto finishPoll = qScopeGuard([&] { poll->setInterval(std::max(250, int(cost.elapsed() * 4))); });
    *shown = recs.size();
    try {
      TraceDocumentPtr d = trace_document_from_records(std::move(recs), origin);
      const bool atEnd = !ctx_.loaded() || !previewActive_ || ctx_.stepIndex() + 1 >= static_cast<int32_t>(ctx_.steps().size());
      if (previewActive_) ctx_.replaceTraces(d);
      else ctx_.setTraces(d);
      previewActive_ = true;
      if (atEnd) ctx_.setStepIndex(static_cast<int32_t>(ctx_.steps().size()) - 1);
      status_->setText(tr("Decoding live: %1 steps so far ...").arg(ctx_.steps().size()));
    } catch (const std::exception&) {
      // A snapshot mid-record cannot happen (records are whole); any other
      // problem is reported by the final load.
    }
  });
  poll->start();
  previewActive_ = false;
  liveRun_ = true;
  startLoad(tr("live run of %1").arg(QFileInfo(samplePath).fileName()), [p = samplePath.toStdString(), edit, live] {
    std::string report;
    TraceDocumentPtr d = trace_document_run_sample(p, edit, &report, live.get());
    return Loaded{d, nullptr, {}, QString::fromStdString(report)};
  });
}

void MainWindow::openDialog() {
  const QString p = QFileDialog::getOpenFileName(this, tr("Open trace"), {}, tr("Traces (*.jsonl);;All files (*)"));
  if (!p.isEmpty()) openTrace(p);
}

void MainWindow::openDiffDialog() {
  const QString a = QFileDialog::getOpenFileName(this, tr("Trace A (reference)"), {}, tr("Traces (*.jsonl);;All files (*)"));
  if (a.isEmpty()) return;
  const QString b = QFileDialog::getOpenFileName(this, tr("Trace B (to compare)"), QFileInfo(a).path(), tr("Traces (*.jsonl);;All files (*)"));
  if (!b.isEmpty()) openDiff(a, b);
}

void MainWindow::showStartPage() {
  if (!start_) {
    start_ = new StartPage(centralWidget());
    static_cast<QVBoxLayout*>(centralWidget()->layout())->insertWidget(1, start_, 1);
    connect(start_, &StartPage::sampleChosen, this, &MainWindow::openFigureSample);
    connect(&ctx_, &TraceContext::traceLoaded, this, [this] {
      start_->hide();
      trie_->show();
    });
  }
  trie_->hide();
  start_->show();
}

void MainWindow::openFigureSample(const QString& samplePath) {
  auto* once = new QObject(this);
  connect(this, &MainWindow::loadFinished, once, [this, once](bool ok, const QString&) {
    once->deleteLater();
    if (!ok) return;
    ctx_.setStepIndex(0);
    for (QDockWidget* d : docks_)
      if (d->objectName() == QLatin1String("narration")) {
        d->show();
        d->raise();
      }
  });
  runSample(samplePath);
}

void MainWindow::runSampleDialog() {
  QDialog dlg(this);
  dlg.setWindowTitle(tr("Run a sample live"));
  auto* form = new QFormLayout(&dlg);
  auto* path = new QLineEdit(&dlg);
  auto* browse = new QPushButton(tr("Browse..."), &dlg);
  auto* prow = new QHBoxLayout;
  prow->addWidget(path, 1);
  prow->addWidget(browse);
  connect(browse, &QPushButton::clicked, &dlg, [&] {
    const QString p = QFileDialog::getOpenFileName(&dlg, tr("Sample"), {}, tr("Samples (*.json)"));
    if (!p.isEmpty()) path->setText(p);
  });
  auto* algo = new QComboBox(&dlg);
  algo->addItem(tr("(as in the sample)"));
  for (const AlgorithmSpec* a : algorithms())  // the beam algorithms: the dialog edits the "beam" section
    if (std::find(a->sections.begin(), a->sections.end(), "beam") != a->sections.end()) algo->addItem(QString::fromStdString(a->name));
  auto spin = [&](int lo, int hi) {
    auto* s = new QSpinBox(&dlg);
    s->setRange(lo - 1, hi);
    s->setSpecialValueText(tr("(as in the sample)"));
    s->setValue(lo - 1);
    return s;
  };
  auto* beams = spin(1, 256);
  auto* tokens = spin(1, 100000);
  auto* gc = spin(0, 100000);
  auto* seed = spin(0, 1 << 30);
  form->addRow(tr("sample file"), prow);
  form->addRow(tr("algorithm"), algo);
  form->addRow(tr("beam width (num_beams)"), beams);
  form->addRow(tr("max new tokens"), tokens);
  form->addRow(tr("GC interval"), gc);
  form->addRow(tr("model seed (synthetic)"), seed);
  auto* bb = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  connect(bb, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(bb, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(bb);
  if (dlg.exec() != QDialog::Accepted || path->text().isEmpty()) return;
  const int a = algo->currentIndex(), nb = beams->value(), nt = tokens->value(), g = gc->value(), sd = seed->value();
  const std::string algoName = algo->currentText().toStdString();
  // The edits go into the sample JSON before sample_parse validates it, so a
  // bad value is reported like a bad file: naming the field.
  runSample(path->text(), [=](nlohmann::json& j) {
    if (a > 0) j["algorithm"] = algoName;
    if (nb >= 1) j["beam"]["num_beams"] = nb;
    if (nt >= 1) j["beam"]["max_new_tokens"] = nt;
    if (g >= 0) j["beam"]["gc_interval"] = g;
    if (sd >= 0 && j.contains("model") && j["model"].is_object()) j["model"]["seed"] = sd;
  });
}

QStringList MainWindow::figurePanes() {
  return {QStringLiteral("trie"), QStringLiteral("mask"), QStringLiteral("kv"), QStringLiteral("plots"), QStringLiteral("verify"),
          QStringLiteral("constraint"), QStringLiteral("narration"), QStringLiteral("window")};
}

std::unique_ptr<FigureSource> MainWindow::figure(const QString& pane) {
  if (!figurePanes().contains(pane)) return nullptr;
  for (QDockWidget* d : docks_)
    if (d->objectName() == pane) {
      d->show();
      d->raise();
    }
  QApplication::processEvents();  // lay out a pane that was in a hidden tab
  if (pane == QLatin1String("trie")) return std::make_unique<SceneFigure>(pane, trie_->scene());
  if (pane == QLatin1String("mask")) return std::make_unique<MaskFigure>(ctx_);
  if (pane == QLatin1String("kv")) return std::make_unique<WidgetFigure>(pane, kv_);
  if (pane == QLatin1String("plots")) return std::make_unique<WidgetFigure>(pane, plots_->tabs()->currentWidget());
  if (pane == QLatin1String("verify")) {
    verify_->ensureUpToDate();
    if (!verify_->hasData())
      return std::make_unique<NoteFigure>(pane, tr("step %1: no verification record").arg(ctx_.step()));
    return std::make_unique<WidgetFigure>(pane, verify_->canvas());
  }
  if (pane == QLatin1String("window")) return std::make_unique<WidgetFigure>(pane, this);
  // A dock whose pane draws its own figure (narration, constraint), else the pane's paint.
  for (QDockWidget* d : docks_) {
    if (d->objectName() != pane) continue;
    if (const auto* own = dynamic_cast<const FigureSource*>(d->widget())) return std::make_unique<FigureRef>(*own);
    return std::make_unique<WidgetFigure>(pane, d->widget());
  }
  return nullptr;
}

bool MainWindow::exportPane(const QString& pane, const QString& path, QSize size, QString* error) {
  if (!ctx_.loaded() && pane != QLatin1String("window")) {
    if (error) *error = path + QStringLiteral(": no trace loaded");
    return false;
  }
  const std::unique_ptr<FigureSource> f = figure(pane);
  if (!f) {
    if (error) *error = path + QStringLiteral(": unknown pane \"%1\" (one of %2)").arg(pane, figurePanes().join(QStringLiteral(", ")));
    return false;
  }
  return export_figure(*f, path, size, error);
}

bool MainWindow::exportStepJson(const QString& path, QString* error) {
  if (!ctx_.loaded()) {
    if (error) *error = tr("no trace loaded");
    return false;
  }
  nlohmann::json out = {{"source", ctx_.shownDoc()->origin}, {"step", ctx_.step()}, {"records", nlohmann::json::array()}};
  for (nlohmann::json& r : ctx_.shownDoc()->replay->records_of_step(ctx_.step())) out["records"].push_back(std::move(r));
  try {
    file_write_atomic(path.toStdString(), out.dump(2) + "\n");
  } catch (const Error& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

void MainWindow::exportDialog(const QString& pane) {
  const QString p = QFileDialog::getSaveFileName(this, tr("Export %1").arg(pane), QStringLiteral("%1-step%2.png").arg(pane).arg(ctx_.step()),
                                                 tr("PNG image (*.png);;SVG drawing (*.svg)"));
  if (p.isEmpty()) return;
  QString err;
  if (!exportPane(pane, p, {}, &err)) showError(tr("Export failed"), err);
}

void MainWindow::exportStepDialog() {
  const QString p = QFileDialog::getSaveFileName(this, tr("Export step"), QStringLiteral("step%1.json").arg(ctx_.step()), tr("JSON (*.json)"));
  if (p.isEmpty()) return;
  QString err;
  if (!exportStepJson(p, &err)) showError(tr("Export failed"), err);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  QStringList files;
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) files << u.toLocalFile();
  if (files.size() >= 2) openDiff(files[0], files[1]);
  else if (files.size() == 1 && files[0].endsWith(QStringLiteral(".json"))) runSample(files[0]);
  else if (files.size() == 1) openTrace(files[0]);
  e->acceptProposedAction();
}

QString MainWindow::statusText() const { return status_->text(); }

void MainWindow::onTraceLoaded(TraceContext& ctx) {
  const TraceDocument* d = ctx.doc();
  setWindowTitle(tr("TrieScope - %1%2").arg(QFileInfo(QString::fromStdString(d->origin)).fileName(),
                                            ctx.diffMode() ? tr(" vs %1").arg(QFileInfo(QString::fromStdString(ctx.doc(TraceContext::B)->origin)).fileName()) : QString()));
}

void MainWindow::onStepChanged(TraceContext& ctx) { onSelectionChanged(ctx); }

void MainWindow::onSelectionChanged(TraceContext& ctx) {
  if (!ctx.loaded()) return;
  const StepView& v = ctx.view();
  const TraceDocument* d = ctx.shownDoc();
  const std::optional<KvRecord>& kv = v.kv;
  const QString na = QStringLiteral("n/a");
  auto num = [&](std::optional<int64_t> x) { return x ? QString::number(*x) : na; };
  QString s = tr("step %1 (%2 of %3)  |  phase %4  |  live beams %5  |  KV slots %6 in use / peak %7 (batch %8)  |  %9, %10")
                  .arg(ctx.step())
                  .arg(ctx.stepIndex() + 1)
                  .arg(ctx.steps().size())
                  .arg(QString::fromStdString(v.phase.empty() ? std::string("-") : v.phase))
                  .arg(num(kv ? kv->live_beams : std::nullopt), kv ? QString::number(kv->slots) : na, kv ? QString::number(kv->peak) : na,
                       num(kv ? kv->batch_slots : std::nullopt))
                  .arg(QString::fromStdString(d->algorithm()), QString::fromStdString(d->backend()));
  if (ctx.diffMode()) s += tr("  |  showing %1").arg(ctx.shownSide() == TraceContext::A ? QStringLiteral("A") : QStringLiteral("B"));
  const int32_t n = ctx.selectedNode();
  if (n >= 0) {
    const TreeNode& nd = v.nodes[static_cast<size_t>(n)];
    s += tr("  |  selected node %1 \"%2\" pos %3 slot %4 row %5").arg(n).arg(token_label(*d->replay, nd.token, 20)).arg(nd.depth).arg(nd.slot).arg(ctx.rowOfNode(n));
  }
  status_->setText(s);
}

}  // namespace triescope::gui
