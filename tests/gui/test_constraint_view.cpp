// The constraint view on real STATIC traces decoded in the test by core's
// run_sample: what it draws is checked against the constraint set itself
// (allowed tokens and id counts by scanning C, the brute-force F_t), never
// against copies of what it printed; plus the paper's Figure 1 node-4
// reading, a 1e6-id set stepped under a time limit, and a missing or
// changed constraint file.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/analysis/constraint_picture.h"
#include "core/config/json_reader.h"
#include "core/constraint/constraint_set.h"
#include "core/decode/run_sample.h"
#include "gui/json_tree_model.h"
#include "gui/main_window.h"
#include "tests/gui/shown_window.h"
#include "gui/panes/constraint_view.h"
#include "gui/panes/json_pane.h"

using namespace triescope;
using namespace triescope::gui;
namespace fs = std::filesystem;

namespace {
const std::string kSamples = TRIESCOPE_SOURCE_DIR "/samples/";

// Tokens t with prefix + t a prefix of some id of C, by scanning C (F_t, STATIC Sec. 4.1).
std::set<int32_t> allowed_by_scan(const ConstraintSet& c, const std::vector<int32_t>& prefix) {
  std::set<int32_t> out;
  if (static_cast<int32_t>(prefix.size()) >= c.length) return out;
  for (int64_t i = 0; i < c.size(); ++i)
    if (std::equal(prefix.begin(), prefix.end(), c.item(i))) out.insert(c.item(i)[prefix.size()]);
  return out;
}

int64_t items_by_scan(const ConstraintSet& c, const std::vector<int32_t>& prefix) {
  int64_t n = 0;
  for (int64_t i = 0; i < c.size(); ++i) n += std::equal(prefix.begin(), prefix.end(), c.item(i)) ? 1 : 0;
  return n;
}

// Copies a sample and its constraint file into `dir` and decodes it there
// (core's run_sample) into `dir`/trace.jsonl, next to the set.
std::string decode_into(const QString& dir, const std::string& sample, const std::string& setFile) {
  fs::copy_file(kSamples + sample, dir.toStdString() + "/" + sample);
  fs::copy_file(kSamples + setFile, dir.toStdString() + "/" + setFile);
  const std::string trace = dir.toStdString() + "/trace.jsonl";
  TraceFileWriter w(trace);
  std::ostringstream os;
  run_sample(sample_load(dir.toStdString() + "/" + sample), &w, os);
  w.commit();
  return trace;
}

// The bundled samples folder the view also searches (TRIESCOPE_SAMPLES_DIR),
// set for one test and restored after it.
struct SamplesDirOverride {
  QByteArray old = qgetenv("TRIESCOPE_SAMPLES_DIR");
  bool had = qEnvironmentVariableIsSet("TRIESCOPE_SAMPLES_DIR");
  explicit SamplesDirOverride(const QString& dir) { qputenv("TRIESCOPE_SAMPLES_DIR", dir.toLocal8Bit()); }
  ~SamplesDirOverride() {
    if (had) qputenv("TRIESCOPE_SAMPLES_DIR", old);
    else qunsetenv("TRIESCOPE_SAMPLES_DIR");
  }
  SamplesDirOverride(const SamplesDirOverride&) = delete;
  SamplesDirOverride& operator=(const SamplesDirOverride&) = delete;
};

struct Window : triescope::gui_tests::ShownWindow {
  ConstraintView* view() { return w.constraintView(); }
  // Opens a trace file the way File > Open does, and waits for its constraint set.
  void open(const std::string& trace) {
    QSignalSpy loaded(&w, &MainWindow::loadFinished);
    QSignalSpy indexed(view(), &ConstraintView::indexLoaded);
    w.openTrace(QString::fromStdString(trace));
    REQUIRE((loaded.count() > 0 || loaded.wait(60000)));
    REQUIRE(loaded.first().at(0).toBool());
    while (view()->loadingIndex() || indexed.isEmpty()) REQUIRE(indexed.wait(120000));
    QApplication::processEvents();
  }
};

bool not_blank(QWidget* w) {
  const QImage img = w->grab().toImage();
  int64_t dark = 0;
  for (int y = 0; y < img.height(); y += 2)
    for (int x = 0; x < img.width(); x += 2) dark += qGray(img.pixel(x, y)) < 160 ? 1 : 0;
  return dark > 100;
}

// Every masked beam of the shown step against C (scan) and the record.
void check_step_against_set(const ConstraintPicture& pic, const StepView& v, const ConstraintSet& c) {
  REQUIRE(pic.indexed);
  const json& rec = v.extra["constraint"];
  REQUIRE(pic.masked.size() == rec.size());
  for (size_t i = 0; i < pic.masked.size(); ++i) {
    const ConstraintBeam& b = pic.masked[i];
    CAPTURE(v.step, b.beam, b.prefix);
    CHECK(b.problem.empty());
    CHECK(b.state == rec[i]["state"].get<int64_t>());
    CHECK(b.level == static_cast<int32_t>(b.prefix.size()));
    const std::set<int32_t> want = allowed_by_scan(c, b.prefix);
    // The row as listed: its first entries (the view caps the list), in token order.
    std::vector<int32_t> got, first;
    for (const auto& e : b.row) got.push_back(e.token);
    for (int32_t t : want)
      if (first.size() < got.size()) first.push_back(t);
    CHECK(got == first);
    CHECK(got.size() == std::min<size_t>(want.size(), 64));
    CHECK(b.row_end - b.row_begin == static_cast<int64_t>(want.size()));
    CHECK(rec[i]["valid"].get<int64_t>() == static_cast<int64_t>(want.size()));
    CHECK(b.items == items_by_scan(c, b.prefix));
    for (const auto& e : b.row) {
      std::vector<int32_t> child = b.prefix;
      child.push_back(e.token);
      CHECK(e.items == items_by_scan(c, child));
    }
    for (const auto& [tok, score] : b.kept) CHECK(want.count(tok) == 1);  // the search kept only allowed tokens
    if (b.dense) {
      std::set<int32_t> bits;
      for (size_t w = 0; w < b.dense_bits.size(); ++w)
        for (int k = 0; k < 64; ++k)
          if ((b.dense_bits[w] >> k) & 1u) bits.insert(static_cast<int32_t>(w * 64 + static_cast<size_t>(k)));
      CHECK(bits == want);
    }
  }
  // The beams after the step: each an existing prefix of C, state and count from C.
  for (const ConstraintBeam& b : pic.after) {
    CAPTURE(v.step, b.beam, b.prefix);
    CHECK(b.indexed);
    CHECK(items_by_scan(c, b.prefix) == b.items);
    CHECK(b.items >= 1);
  }
}
}  // namespace

TEST_CASE("constraint view: static_figure1 reads as the paper's Figure 1 at every step", "[gui][constraint_view]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  const std::string trace = decode_into(dir.path(), "static_figure1.json", "static_figure1.txt");
  const ConstraintSet c = constraint_set_read(kSamples + "static_figure1.txt", "text", 4);
  Window win;
  win.open(trace);
  ConstraintView* view = win.view();
  TraceContext& ctx = win.w.context();
  CHECK(view->indexed());
  CHECK(view->loadMessage().contains(QStringLiteral("sha256 matches")));
  CHECK(view->isVisible());  // the dock is raised for a constrained trace
  for (int32_t step : ctx.steps()) {
    ctx.setStep(step);
    QApplication::processEvents();
    const ConstraintPicture& pic = view->figure().picture();
    CAPTURE(step);
    CHECK(pic.whole_tree);
    CHECK(static_cast<int64_t>(pic.tree.size()) == 8);  // Figure 1b: root + 2 + 2 + 3 nodes
    for (const auto& n : pic.tree) {
      std::vector<int32_t> prefix;
      for (int32_t i = static_cast<int32_t>(&n - pic.tree.data()); i > 0; i = pic.tree[static_cast<size_t>(i)].parent)
        prefix.insert(prefix.begin(), pic.tree[static_cast<size_t>(i)].token);
      CHECK(n.items == items_by_scan(c, prefix));
    }
    if (step == 0) continue;
    check_step_against_set(pic, ctx.view(), c);
    CHECK(not_blank(view->canvasWidget()));
  }
  SECTION("step 3: the paper's node-4 reading, and the final beams' states on a step without a forward pass") {
    ctx.setStep(ctx.steps().back());
    QApplication::processEvents();
    REQUIRE_FALSE(ctx.view().forward);  // the mask pane has nothing here
    const ConstraintPicture& pic = view->figure().picture();
    const auto node4 = std::find_if(pic.masked.begin(), pic.masked.end(), [](const ConstraintBeam& b) { return b.prefix == std::vector<int32_t>{3, 1}; });
    REQUIRE(node4 != pic.masked.end());
    CHECK(node4->state == 4);  // "row_start = P[4] = 5 and row_end = P[4+1] = 7", C = (2, 3), V = (6, 7)
    CHECK(node4->row_begin == 5);
    CHECK(node4->row_end == 7);
    REQUIRE(node4->row.size() == 2);
    CHECK(node4->row[0].token == 2);
    CHECK(node4->row[0].next == 6);
    CHECK(node4->row[1].token == 3);
    CHECK(node4->row[1].next == 7);
    REQUIRE_FALSE(pic.after.empty());
    for (const ConstraintBeam& b : pic.after) {
      CHECK(b.level == 3);
      CHECK(c.contains(b.prefix));
      CHECK(b.items == 1);
    }
    CHECK(view->figure().texts().contains(QStringLiteral("complete id of C (leaf)")));
    // Clicking a final beam's marker selects its node in the trie.
    const ConstraintBeam& b0 = pic.after.front();
    const QRectF r = view->figure().beamMarkerRect(b0.beam, true);
    REQUIRE_FALSE(r.isEmpty());
    QTest::mouseClick(view->canvasWidget(), Qt::LeftButton, {}, r.center().toPoint());
    CHECK(ctx.selectedNode() == b0.node);
    // The raw record stays available.
    CHECK(win.w.constraintPane()->hasData());
    CHECK(win.w.constraintPane()->model()->rowCount() == static_cast<int>(pic.masked.size()));
  }
}

TEST_CASE("constraint view: static_constrained_beam renders every step, with the dense bit rows", "[gui][constraint_view]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  const std::string trace = decode_into(dir.path(), "static_constrained_beam.json", "static_random_2k.npy");
  const ConstraintSet c = constraint_set_read(kSamples + "static_random_2k.npy", "npy", 256);
  Window win;
  win.open(trace);
  ConstraintView* view = win.view();
  TraceContext& ctx = win.w.context();
  REQUIRE(view->indexed());
  int dense_steps = 0;
  std::vector<double> ms;
  ctx.setStep(ctx.steps().back());
  QApplication::processEvents();
  for (int32_t step : ctx.steps()) {
    QElapsedTimer t;
    t.start();
    ctx.setStep(step);
    QApplication::processEvents();
    ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    CAPTURE(step);
    const ConstraintPicture& pic = view->figure().picture();
    CHECK_FALSE(pic.whole_tree);  // 6,227 states: only the beams' neighbourhood
    CHECK(pic.tree.size() < 200);
    CHECK(not_blank(view->canvasWidget()));
    if (step == 0) continue;
    check_step_against_set(pic, ctx.view(), c);
    bool dense = false;
    for (const auto& b : pic.masked) dense = dense || b.dense;
    if (dense) {
      ++dense_steps;
      CHECK(view->figure().texts().join(QLatin1Char('\n')).contains(QStringLiteral("Dense levels (d = 2)")));
    }
  }
  CHECK(dense_steps == 2);  // d = 2: steps 1 and 2 read bit rows
  std::sort(ms.begin(), ms.end());
  WARN("static_constrained_beam: " << ms.size() << " steps, median " << ms[ms.size() / 2] << " ms, max " << ms.back() << " ms a step");
  CHECK(ms.back() < 100);
}

TEST_CASE("constraint view: a set of 1e6 ids loads off the UI thread and steps fast", "[gui][constraint_view][slow]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  const std::string d = dir.path().toStdString();
  constraint_set_write_npy(constraint_set_random(1000000, 4, 2048, 11), d + "/ids_1m.npy");
  {
    std::ofstream s(d + "/big.json");
    s << R"({"schema": "triescope.sample", "version": 1, "name": "1e6 ids", "algorithm": "trie_beam_search",
      "model": {"type": "synthetic", "vocab_size": 2048, "seed": 5, "peakiness": 1.5}, "prompt": [1, 2, 3],
      "beam": {"num_beams": 8, "max_new_tokens": 4, "eos_token": -1, "length_penalty": 1.0, "early_stopping": "never", "gc_interval": 0},
      "constraint": {"file": "ids_1m.npy", "format": "npy", "dense_levels": 1, "layout": "compact", "impl": "vntk"}})";
  }
  {
    TraceFileWriter w(d + "/big.jsonl");
    std::ostringstream os;
    run_sample(sample_load(d + "/big.json"), &w, os);
    w.commit();
  }
  Window win;
  QElapsedTimer load;
  load.start();
  win.open(d + "/big.jsonl");
  const double load_ms = static_cast<double>(load.nsecsElapsed()) / 1e6;
  ConstraintView* view = win.view();
  TraceContext& ctx = win.w.context();
  REQUIRE(view->indexed());
  std::vector<double> ms;
  for (int round = 0; round < 2; ++round)
    for (int32_t step : ctx.steps()) {
      QElapsedTimer t;
      t.start();
      ctx.setStep(step);
      QApplication::processEvents();
      ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
      const ConstraintPicture& pic = view->figure().picture();
      CHECK(pic.tree.size() < 200);  // never the whole set in the drawing
      if (step > 0) CHECK(pic.masked.size() == ctx.view().extra["constraint"].size());
      for (const auto& b : pic.masked) CHECK(b.problem.empty());
    }
  std::sort(ms.begin(), ms.end());
  WARN("1e6 ids: open + index " << load_ms << " ms; " << ms.size() << " steps, median " << ms[ms.size() / 2] << " ms, max " << ms.back()
                                << " ms a step");
  CHECK(ms.back() < 100);
}

TEST_CASE("constraint view: a missing or changed constraint file is named and the records alone are shown", "[gui][constraint_view]") {
  QTemporaryDir dir, noSamples;
  REQUIRE(dir.isValid());
  REQUIRE(noSamples.isValid());
  const SamplesDirOverride none(noSamples.path());  // no bundled copy to fall back on
  const std::string trace = decode_into(dir.path(), "static_figure1.json", "static_figure1.txt");
  const std::string set = dir.path().toStdString() + "/static_figure1.txt";
  auto records_only = [](ConstraintView* view, TraceContext& ctx) {
    ctx.setStep(2);
    QApplication::processEvents();
    const ConstraintPicture& pic = view->figure().picture();
    CHECK_FALSE(pic.indexed);
    REQUIRE(pic.masked.size() == ctx.view().extra["constraint"].size());
    for (size_t i = 0; i < pic.masked.size(); ++i) {
      CHECK(pic.masked[i].state == ctx.view().extra["constraint"][i]["state"].get<int64_t>());  // as recorded
      CHECK(pic.masked[i].row.empty());  // nothing the records do not say
      CHECK(pic.masked[i].items == -1);
    }
    for (const auto& n : pic.tree) CHECK(n.items == -1);
    CHECK(view->figure().texts().join(QLatin1Char('\n')).contains(QStringLiteral("set not loaded")));
  };
  SECTION("missing") {
    fs::remove(set);
    Window win;
    win.open(trace);
    CHECK_FALSE(win.view()->indexed());
    CHECK(win.view()->loadMessage().contains(QStringLiteral("static_figure1.txt")));
    CHECK(win.view()->loadMessage().contains(QStringLiteral("not found")));
    records_only(win.view(), win.w.context());
    // The user picks the file: checked and indexed.
    QSignalSpy indexed(win.view(), &ConstraintView::indexLoaded);
    win.view()->chooseConstraintFile(QString::fromStdString(kSamples + "static_figure1.txt"));
    REQUIRE(indexed.wait(30000));
    CHECK(win.view()->indexed());
  }
  SECTION("changed") {
    std::ofstream(set, std::ios::app) << "1 2 3\n";
    Window win;
    win.open(trace);
    CHECK_FALSE(win.view()->indexed());
    CHECK(win.view()->loadMessage().contains(QStringLiteral("config.constraint.set.sha256")));
    CHECK(win.view()->loadMessage().contains(QString::fromStdString(set)));
    records_only(win.view(), win.w.context());
  }
}

TEST_CASE("constraint view: a bundled sample's trace written elsewhere finds its set in the samples folder", "[gui][constraint_view]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  const std::string trace = decode_into(dir.path(), "static_figure1.json", "static_figure1.txt");
  const std::string set = dir.path().toStdString() + "/static_figure1.txt";
  const QString bundledSet = QString::fromStdString(fs::path(kSamples + "static_figure1.txt").lexically_normal().string());
  const SamplesDirOverride bundled(QString::fromStdString(kSamples));
  SECTION("missing next to the trace") {
    fs::remove(set);
    Window win;
    win.open(trace);
    CHECK(win.view()->indexed());
    CHECK(win.view()->loadMessage().startsWith(bundledSet + QStringLiteral(":")));
    CHECK(win.view()->loadMessage().contains(QStringLiteral("sha256 matches the header")));
  }
  SECTION("changed next to the trace: the bundled copy, whose sha256 matches, is used and the changed one named") {
    std::ofstream(set, std::ios::app) << "1 2 3\n";
    Window win;
    win.open(trace);
    CHECK(win.view()->indexed());
    const QString m = win.view()->loadMessage();
    CHECK(m.startsWith(bundledSet + QStringLiteral(":")));
    CHECK(m.contains(QStringLiteral("not used: ") + QString::fromStdString(set)));
    CHECK(m.contains(QStringLiteral("config.constraint.set.sha256")));
  }
}
