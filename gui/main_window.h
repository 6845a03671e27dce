// The inspector's main window: the trie in the centre, linked dock panes
// around it, timeline on top, File/View/Go menus, loading off the UI thread.
#pragma once
#include <QMainWindow>

#include <functional>
#include <memory>

#include "gui/trace_context.h"

class QLabel;
namespace triescope::gui { class StatusText; }
class QProgressBar;
class QMenu;

namespace triescope::gui {

class TrieView;
class MaskView;
class KvView;
class PlotsPane;
class DiffPane;
class BeamsPane;
class NarrationPane;
class JsonPane;
class ConstraintView;
class VerifyPane;
class Timeline;
class FigureSource;
class StartPage;

class MainWindow final : public QMainWindow, public ITraceViewer {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  TraceContext& context() { return ctx_; }
  TrieView* trieView() const { return trie_; }
  MaskView* maskView() const { return mask_; }
  KvView* kvView() const { return kv_; }
  PlotsPane* plotsPane() const { return plots_; }
  DiffPane* diffPane() const { return diff_; }
  BeamsPane* beamsPane() const { return beams_; }
  NarrationPane* narrationPane() const { return narration_; }
  JsonPane* constraintPane() const { return constraint_; }
  ConstraintView* constraintView() const { return constraintView_; }
  VerifyPane* verifyPane() const { return verify_; }
  Timeline* timeline() const { return timeline_; }
  QString statusText() const;

  // No modal dialogs: errors go to stderr (screenshot mode, tests).
  void setHeadless(bool on) { headless_ = on; }
  bool loading() const { return loading_; }

  // All three load off the UI thread and Q_EMIT loadFinished.
  void openTrace(const QString& path);
  void openDiff(const QString& a, const QString& b);
  void runSample(const QString& samplePath, std::function<void(nlohmann::json&)> edit = {});
  // The start page (opened with nothing): the paper-figure samples; choosing
  // one runs it and shows step 0 with the narration in front.
  void showStartPage();
  StartPage* startPage() const { return start_; }
  void openFigureSample(const QString& samplePath);

  // The panes a figure can be exported from ("trie", "mask", "kv", ...), and
  // the figure of one for the shown step (null for another name). Raises the
  // pane's dock, so a pane in a hidden tab is laid out before it is drawn.
  static QStringList figurePanes();
  std::unique_ptr<FigureSource> figure(const QString& pane);
  // Export: .svg (vector, text as text) or .png, at the figure's natural size
  // or scaled to fit `size` (gui/export/figure_export.h).
  bool exportPane(const QString& pane, const QString& path, QSize size = {}, QString* error = nullptr);
  bool exportStepJson(const QString& path, QString* error = nullptr);

 Q_SIGNALS:
  void loadFinished(bool ok, const QString& error);
  // A large trace's first records are on screen; the rest is still loading.
  void previewShown();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void onTraceLoaded(TraceContext& ctx) override;
  void onStepChanged(TraceContext& ctx) override;
  void onSelectionChanged(TraceContext& ctx) override;
  struct Loaded {
    TraceDocumentPtr a, b;
    QString error, report;
  };
  bool previewActive_ = false;
  bool liveRun_ = false;  // a live decode follows its last step
  void startLoad(const QString& what, std::function<Loaded()> job);
  void showError(const QString& title, const QString& message);
  void buildMenus();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void openDialog();
  void openDiffDialog();
  void runSampleDialog();
  void exportDialog(const QString& pane);
  void exportStepDialog();

  TraceContext ctx_;
  TrieView* trie_;
  MaskView* mask_;
  KvView* kv_;
  PlotsPane* plots_;
  DiffPane* diff_;
  BeamsPane* beams_;
  NarrationPane* narration_;
  JsonPane* constraint_;
  ConstraintView* constraintView_;
  VerifyPane* verify_;
  Timeline* timeline_;
  StartPage* start_ = nullptr;
  StatusText* status_;
  QProgressBar* progress_;
  QMenu* recentMenu_ = nullptr;
  std::vector<class QDockWidget*> docks_;
  bool headless_ = false;
  bool loading_ = false;
};

}  // namespace triescope::gui
