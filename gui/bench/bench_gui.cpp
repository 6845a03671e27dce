// triescope-gui-bench: the GUI numbers in docs/benchmarks-gui.md.
//   make-tree-trace OUT [--nodes 5000] [--queries 4096] [--steps 8] [--seed 1] [--vary-mask]
//       a trace whose every step holds a NODES-node tree and a QUERIES x QUERIES
//       ancestor mask (built by core's ancestor_mask_build), for stepping times.
//       --vary-mask: step s lists the queries rotated by 97 s rows, so no two
//       adjacent steps record the same pass (the mask pane cannot skip its
//       repaint, as in a real decode)
//   step TRACE [--repeat 3] [--size 1600x1000] [--no-prefetch] [--backward]
//       opens TRACE in the main window, steps through every adjacent pair of
//       steps and prints the time of TraceContext::setStep (replay + all panes)
//       plus the processEvents() that paints the window. --no-prefetch: the
//       context replays no neighbour in the background, so with --repeat 1
//       every step is cold (no prepared state, no cached layout).
//       --backward: steps from the last step down to the first.
//       --pause-ms N: sleep N ms before each step (no events processed).
//       --no-follow: the trie pane's Follow option off (no scrolling to
//       each step's new nodes).
//       --per-step: print each step's time, split into the view, every
//       viewer's onStepChanged and the paint.
//   layout [--nodes 100,200,400,800] : graphviz dot vs tidy layout time
#include <QApplication>
#include <sys/resource.h>
#include <QPaintEvent>
#include <QElapsedTimer>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <sys/resource.h>

#include "core/mask/ancestor_mask.h"
#include "core/trace/forward_record.h"
#include "core/trace/kv_record.h"
#include "core/trace/trace.h"
#include "gui/layout/tree_layout.h"
#include "gui/main_window.h"
#include "gui/panes/kv_view.h"
#include "gui/panes/mask_view.h"
#include "gui/panes/plots_pane.h"
#include "gui/panes/trie_view.h"
#include <QGraphicsView>

using namespace triescope;

namespace {

// Counts paint events per widget class during the stepping loop.
struct PaintCounter : QObject {
  std::map<std::string, int> counts;
  std::map<std::string, double> area;  // painted pixels per class
  bool on = false;
  bool eventFilter(QObject* o, QEvent* e) override {
    if (on && (e->type() == QEvent::LayoutRequest || e->type() == QEvent::Resize || e->type() == QEvent::Move ||
               e->type() == QEvent::UpdateRequest) && getenv("TS_BENCH_EVENTS"))
      std::cerr << "event " << int(e->type()) << " " << o->metaObject()->className() << " " << o->objectName().toStdString() << "\n";
    if (on && e->type() == QEvent::Paint) {
      std::string k = o->metaObject()->className();
      if (k == "QWidget" && o->parent()) k += std::string("<") + o->parent()->metaObject()->className();
      const QRect r = static_cast<QPaintEvent*>(e)->rect();
      if (getenv("TS_BENCH_EVENTS")) std::cerr << "paint " << k << " " << r.width() << "x" << r.height() << "+" << r.x() << "+" << r.y() << "\n";
      ++counts[k];
      area[k] += static_cast<double>(r.width()) * r.height();
    }
    return false;
  }
};

// Times every paint event by widget class and every UpdateRequest (a
// top-level backing-store sync: all paints of a frame plus the flush), for
// --per-step.
struct BenchApp : QApplication {
  using QApplication::QApplication;
  std::map<std::string, double> paint_ms;
  std::map<std::string, long> paint_faults;
  double sync_ms = 0;
  bool notify(QObject* o, QEvent* e) override {
    const QEvent::Type t = e->type();
    if (t != QEvent::Paint && t != QEvent::UpdateRequest) return QApplication::notify(o, e);
    rusage u0{}, u1{};
    getrusage(RUSAGE_SELF, &u0);
    const auto a = std::chrono::steady_clock::now();
    const bool r = QApplication::notify(o, e);
    getrusage(RUSAGE_SELF, &u1);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
    if (t == QEvent::UpdateRequest) sync_ms += ms;
    else {
      std::string k = o->metaObject()->className();
      if (k == "QWidget" && o->parent()) k += std::string("<") + o->parent()->metaObject()->className();
      paint_ms[k] += ms;
      paint_faults[k] += u1.ru_minflt - u0.ru_minflt;
    }
    return r;
  }
};

std::string arg_value(int argc, char** argv, const std::string& key, const std::string& dflt) {
  for (int i = 0; i + 1 < argc; ++i)
    if (argv[i] == key) return argv[i + 1];
  return dflt;
}

int make_tree_trace(const std::string& out, int nodes, int queries, int steps, uint32_t seed, bool vary) {
  std::mt19937 rng(seed);
  TokenTree tree;
  tree.add_root(1);
  for (int i = 1; i < nodes; ++i) {
    const int lo = std::max(0, i - 64);
    tree.add_child(lo + static_cast<int>(rng() % static_cast<uint32_t>(i - lo)), static_cast<int>(rng() % 512), -0.01 * i);
  }
  // The first QUERIES nodes hold KV slots; the rest are pruned candidates
  // whose KV was never kept (their ancestors all have smaller ids).
  std::vector<int32_t> q;
  for (int i = 0; i < nodes; ++i) {
    if (i < queries) {
      tree.node(i).slot = i;
      q.push_back(i);
    } else {
      tree.node(i).slot = kNoSlot;
      tree.node(i).status = NodeStatus::live;  // candidates not yet written to the KV cache
    }
  }
  const BitMask mask = ancestor_mask_build(tree, q, queries);
  // Later steps add `grow` slot-less leaves each, so adjacent steps have
  // different trees (the trie view cannot reuse the previous layout).
  const int grow = 16;
  const int first = std::max(queries, nodes - grow * (steps - 1));
  const ForwardView fwd{q, position_ids(tree, q), q, mask};
  TraceFileWriter w(out);
  w.record(trace_header("bench_tree", "cpu-reference", json{{"prompt", json::array()}}, json{{"type", "bench"}}, {}));
  for (int s = 0; s < steps; ++s) {
    ForwardView f = fwd;
    if (vary && queries > 0) {
      const size_t rot = static_cast<size_t>(97 * s) % static_cast<size_t>(queries);
      for (std::vector<int32_t>* v : {&f.queries, &f.positions, &f.slots}) std::rotate(v->begin(), v->begin() + static_cast<long>(rot), v->end());
      for (int32_t r = 0; r < f.mask.rows; ++r)  // row r takes row r + rot, as the vectors do
        std::copy_n(fwd.mask.row(static_cast<int32_t>((static_cast<size_t>(r) + rot) % static_cast<size_t>(f.mask.rows))),
                    f.mask.words_per_row, f.mask.row(r));
    }
    const KvRecord kv{.slots = queries, .peak = queries, .batch_slots = nodes, .live_beams = queries};
    json rec = {{"kind", "step"}, {"step", s}, {"phase", s == 0 ? "prefill" : "verify"}, {kForwardField, f.to_json()}, {kKvField, kv.to_json()}};
    json added = json::array();
    const int lo = s == 0 ? 0 : first + grow * (s - 1), hi = s == 0 ? first : std::min(nodes, first + grow * s);
    for (int i = lo; i < hi; ++i) added.push_back(trace_node(tree.node(i)));
    rec["added"] = std::move(added);
    if (s > 0) {
      json st = json::array();
      for (int k = 0; k < 16; ++k)
        st.push_back({{"node", static_cast<int>(rng() % static_cast<uint32_t>(queries))}, {"status", k % 2 ? "accepted" : "rejected"}});
      rec["status"] = std::move(st);
    }
    w.record(std::move(rec));
  }
  w.commit();
  std::cout << out << ": " << steps << " steps, " << nodes << " nodes, mask " << queries << "x" << queries << "\n";
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Opens `path` in `win` and lets the window settle as it does before a
// person's first key press.
void open_settled(gui::MainWindow& win, const std::string& path, int w, int h, bool prefetch, bool backward, bool no_follow) {
  win.context().setPrefetchEnabled(prefetch);
  if (no_follow) win.trieView()->setFollow(false);
  win.setHeadless(true);
  win.resize(w, h);
  win.show();
  QApplication::processEvents();
  win.context().setTraces(gui::trace_document_load(path));
  const auto& steps = win.context().steps();
  if (backward && !steps.empty()) win.context().setStep(steps.back());
  win.repaint();
  // One processEvents() leaves the load's layout requests (dock tab texts,
  // the plots) cascading up to the main window, which then re-laid out and
  // repainted the whole window inside the first two timed steps (24-30 ms;
  // docs/benchmarks-gui.md). 300 ms of event processing, nothing else.
  QElapsedTimer settle;
  settle.start();
  while (settle.elapsed() < 300) {
    QApplication::processEvents(QEventLoop::AllEvents, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Times of the stepping loop, one entry per adjacent-step change.
struct StepTimes {
  std::vector<double> ctx_ms, paint_ms, total_ms;  // setStep, the processEvents() after it, both
  std::vector<double> view_ms, replay_in_view_ms;  // TraceContext's view, and the replay inside it
  std::map<std::string, std::vector<double>> viewer_ms;  // each viewer's onStepChanged
  std::map<std::string, int> sources;                    // where each step's view came from
};

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// --per-step: one step's time split into the view, every viewer's
// onStepChanged and the paint.
void print_step_line(gui::MainWindow& win, int32_t step, const StepTimes& t, const rusage& ru0, const rusage& ru1, const rusage& ru2,
                     const BenchApp* bapp) {
  std::cout << "  step " << step << ": total " << t.total_ms.back() << " = setStep " << t.ctx_ms.back() << " (view " << t.view_ms.back();
  for (auto& [viewer, ms] : win.context().lastViewerMs()) {
    auto* o = dynamic_cast<QObject*>(viewer);
    std::cout << ", " << (o ? o->metaObject()->className() : "?") << " " << ms;
  }
  std::cout << ") + paint " << t.paint_ms.back() << " [page faults: setStep " << ru1.ru_minflt - ru0.ru_minflt << ", paint "
            << ru2.ru_minflt - ru1.ru_minflt << "]";
  if (bapp) {
    std::cout << " (backing-store syncs " << bapp->sync_ms << ", of which paint events:";
    for (auto& [cls, ms] : bapp->paint_ms)
      if (ms >= 0.3) std::cout << " " << cls << " " << ms << " (" << bapp->paint_faults.at(cls) << " faults)";
    std::cout << ")";
  }
  std::cout << "\n";
}

// Steps through every adjacent pair of steps `repeat` times, timing
// setStep and the paint after it.
StepTimes time_steps(gui::MainWindow& win, int repeat, bool backward, int pause_ms, bool per_step) {
  StepTimes t;
  const auto& steps = win.context().steps();
  for (int r = 0; r < repeat; ++r)
    for (size_t k = 1; k < steps.size(); ++k) {
      const size_t i = backward ? steps.size() - 1 - k : k;
      // A person's pause between key presses; with --no-prefetch nothing is
      // prepared in it (no event loop runs), the box only settles.
      if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      auto* bapp = dynamic_cast<BenchApp*>(QApplication::instance());
      if (bapp) {
        bapp->paint_ms.clear();
        bapp->paint_faults.clear();
        bapp->sync_ms = 0;
      }
      rusage ru0{}, ru1{}, ru2{};
      getrusage(RUSAGE_SELF, &ru0);
      const auto t0 = std::chrono::steady_clock::now();
      if (getenv("TS_BENCH_EVENTS")) std::cerr << "--- setStep " << steps[i] << "\n";
      win.context().setStep(steps[i]);
      if (getenv("TS_BENCH_EVENTS")) std::cerr << "--- processEvents\n";
      const auto t1 = std::chrono::steady_clock::now();
      getrusage(RUSAGE_SELF, &ru1);
      t.view_ms.push_back(win.context().lastViewMs());
      t.replay_in_view_ms.push_back(win.context().lastReplayMs());
      const char* src_names[] = {"prefetched", "kept", "advanced", "replayed"};
      ++t.sources[src_names[static_cast<int>(win.context().lastViewSource())]];
      for (auto& [viewer, ms] : win.context().lastViewerMs()) {
        auto* o = dynamic_cast<QObject*>(viewer);
        t.viewer_ms[o ? o->metaObject()->className() : "?"].push_back(ms);
      }
      // What the event loop does after a step: paint every widget marked
      // dirty and flush to the display.
      QApplication::processEvents();
      const auto t2 = std::chrono::steady_clock::now();
      getrusage(RUSAGE_SELF, &ru2);
      t.ctx_ms.push_back(ms_between(t0, t1));
      t.paint_ms.push_back(ms_between(t1, t2));
      t.total_ms.push_back(ms_between(t0, t2));
      if (per_step) print_step_line(win, steps[i], t, ru0, ru1, ru2, bapp);
    }
  return t;
}

void print_step_breakdown(const StepTimes& t) {
  std::cout << "  view source per step:";
  for (auto& [k, n] : t.sources) std::cout << " " << k << "=" << n;
  std::cout << "\n  setStep breakdown (median / max ms): view " << median(t.view_ms) << " / " << *std::max_element(t.view_ms.begin(), t.view_ms.end())
            << " (of which advance/at " << median(t.replay_in_view_ms) << " / "
            << *std::max_element(t.replay_in_view_ms.begin(), t.replay_in_view_ms.end()) << ")";
  for (auto& [k, v] : t.viewer_ms) std::cout << ", " << k << " " << median(v) << " / " << *std::max_element(v.begin(), v.end());
  std::cout << "\n";
}

// First paint of each pane right after a step (its caches cold), the trie's
// second paint, and the rest of the frame.
void print_first_repaints(gui::MainWindow& win) {
  const auto& steps = win.context().steps();
  const char* names[] = {"trie", "mask", "kv", "plots"};
  std::vector<double> first_ms[4];
  std::vector<double> second_trie, rest_ms;
  for (size_t i = 1; i < steps.size(); ++i) {
    win.context().setStep(steps[i - 1]);
    QApplication::processEvents();
    win.context().setStep(steps[i]);
    QWidget* ws[] = {win.trieView()->graphicsView()->viewport(), win.maskView()->viewport(), win.kvView(), static_cast<QWidget*>(win.plotsPane())};
    for (int k = 0; k < 4; ++k) {
      const auto a = std::chrono::steady_clock::now();
      ws[k]->repaint();
      first_ms[static_cast<size_t>(k)].push_back(ms_between(a, std::chrono::steady_clock::now()));
    }
    const auto a = std::chrono::steady_clock::now();
    ws[0]->repaint();
    second_trie.push_back(ms_between(a, std::chrono::steady_clock::now()));
    // What the event loop still does once the four panes have painted:
    // the other widgets (timeline, status, scroll bars, docks) and the flush.
    const auto b = std::chrono::steady_clock::now();
    QApplication::processEvents();
    rest_ms.push_back(ms_between(b, std::chrono::steady_clock::now()));
  }
  std::cout << "  rest of the frame after the four panes painted (other widgets + flush): median " << median(rest_ms) << " ms\n";
  std::cout << "  second repaint after a step, trie: median " << median(second_trie) << " ms\n";
  for (int k = 0; k < 4; ++k) std::cout << "  first repaint after a step, " << names[k] << ": median " << median(first_ms[k]) << " ms\n";
}

// The replay alone: TraceReplay::at, advance from the previous step, and
// the forward masks' parse.
void print_replay_times(gui::MainWindow& win) {
  const auto& steps = win.context().steps();
  const auto& rp = *win.context().doc()->replay;
  std::vector<double> replay_ms;
  for (size_t i = 1; i < steps.size(); ++i) {
    const auto a = std::chrono::steady_clock::now();
    (void)rp.at(steps[i]);
    replay_ms.push_back(ms_between(a, std::chrono::steady_clock::now()));
  }
  std::cout << "  TraceReplay::at alone: median " << median(replay_ms) << " ms\n";
  std::vector<double> adv_ms, mask_ms;
  StepView prev = rp.at(steps.front());
  for (size_t i = 1; i < steps.size(); ++i) {
    const auto a = std::chrono::steady_clock::now();
    StepView next = rp.advance(prev, steps[i]);
    adv_ms.push_back(ms_between(a, std::chrono::steady_clock::now()));
    prev = std::move(next);
  }
  json scratch;
  for (size_t ri = 0; ri < rp.index().size(); ++ri)
    if (const json& r = rp.records_view().at(ri, scratch); r.value("kind", "") == "step" && r.contains(kForwardField) && r[kForwardField].contains(kForwardMask)) {
      const auto a = std::chrono::steady_clock::now();
      (void)trace_mask_parse(r[kForwardField][kForwardMask], "bench");
      mask_ms.push_back(ms_between(a, std::chrono::steady_clock::now()));
    }
  std::cout << "  TraceReplay::advance from the previous step: median " << median(adv_ms) << " ms, max "
            << *std::max_element(adv_ms.begin(), adv_ms.end()) << " ms\n";
  if (!mask_ms.empty()) std::cout << "  of which forward.mask parse (trace_mask_parse): median " << median(mask_ms) << " ms\n";
}

// Each pane repainted 5 times at the current step (warm caches).
void print_warm_repaints(gui::MainWindow& win) {
  std::vector<std::pair<const char*, QWidget*>> panes = {{"trie", win.trieView()->graphicsView()->viewport()}, {"mask", win.maskView()->viewport()},
                                                         {"kv", win.kvView()}, {"plots", static_cast<QWidget*>(win.plotsPane())}};
  for (auto& [name, wdg] : panes) {
    std::vector<double> t;
    for (int k = 0; k < 5; ++k) {
      const auto a = std::chrono::steady_clock::now();
      wdg->repaint();
      t.push_back(ms_between(a, std::chrono::steady_clock::now()));
    }
    std::cout << "  repaint " << name << ": median " << median(t) << " ms\n";
  }
}

void print_summary(gui::MainWindow& win, const std::string& path, const StepTimes& t, int w, int h) {
  const auto& v = win.context().view();
  std::cout << path << ": " << win.context().steps().size() << " steps, tree " << v.nodes.size() << " nodes, mask "
            << (v.forward ? v.forward->mask.rows : 0) << "x" << (v.forward ? v.forward->mask.cols : 0) << ", layout "
            << layout::layout_engine_name(win.trieView()->engine()) << ", window " << w << "x" << h << "\n"
            << "  adjacent-step changes: " << t.total_ms.size() << "\n"
            << "  setStep (replay + panes): median " << median(t.ctx_ms) << " ms, max " << *std::max_element(t.ctx_ms.begin(), t.ctx_ms.end()) << " ms\n"
            << "  paint (processEvents):    median " << median(t.paint_ms) << " ms, max " << *std::max_element(t.paint_ms.begin(), t.paint_ms.end()) << " ms\n"
            << "  total:                    median " << median(t.total_ms) << " ms, max " << *std::max_element(t.total_ms.begin(), t.total_ms.end()) << " ms\n";
  std::vector<double> sorted = t.total_ms;
  std::sort(sorted.begin(), sorted.end());
  const auto over = std::count_if(t.total_ms.begin(), t.total_ms.end(), [](double x) { return x >= 16.0; });
  std::cout << "  total p90 " << sorted[sorted.size() * 9 / 10] << " ms; steps at >= 16 ms: " << over << " of " << sorted.size() << " (indices:";
  for (size_t k = 0; k < t.total_ms.size(); ++k)
    if (t.total_ms[k] >= 16.0) std::cout << " " << k + 1;
  std::cout << ")\n";
}

int step_bench(const std::string& path, int repeat, int w, int h, bool prefetch, bool backward, int pause_ms, bool per_step, bool no_follow) {
  gui::MainWindow win;
  open_settled(win, path, w, h, prefetch, backward, no_follow);
  PaintCounter counter;
  QApplication::instance()->installEventFilter(&counter);
  counter.on = true;
  const StepTimes t = time_steps(win, repeat, backward, pause_ms, per_step);
  counter.on = false;
  print_step_breakdown(t);
  win.context().setPrefetchEnabled(false);  // the breakdown below times each part alone
  std::cout << "  paint events during the stepping loop:";
  for (auto& [k, n] : counter.counts) std::cout << " " << k << "=" << n << " (" << static_cast<int64_t>(counter.area[k] / 1000) << " kpx)";
  std::cout << "\n";
  print_first_repaints(win);
  print_replay_times(win);
  print_warm_repaints(win);
  print_summary(win, path, t, w, h);
  return 0;
}

int layout_bench(const std::string& sizes) {
  std::mt19937 rng(3);
  std::stringstream ss(sizes);
  std::string tok;
  std::cout << "nodes  dot_ms  tidy_ms   (beam-trie-like random trees: parent among the last 16 nodes)\n";
  while (std::getline(ss, tok, ',')) {
    const int n = std::stoi(tok);
    std::vector<layout::LayoutNode> in;
    for (int i = 0; i < n; ++i) {
      const int lo = std::max(0, i - 16);
      in.push_back({i, i == 0 ? -1 : lo + static_cast<int>(rng() % static_cast<uint32_t>(i - lo)), 50, 30});
    }
    auto time = [&](auto fn) {
      const auto t0 = std::chrono::steady_clock::now();
      fn(in, layout::LayoutOptions{});
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    const double dot = n <= 3200 ? time(layout::tree_layout_dot) : -1;
    const double tidy = time(layout::tree_layout_tidy);
    std::printf("%5d  %7.1f  %7.2f\n", n, dot, tidy);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool help = argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h");
  if (argc < 2 || help) {
    (help ? std::cout : std::cerr)
        << "usage: triescope-gui-bench make-tree-trace OUT [--nodes N] [--queries Q] [--steps S] | step TRACE [--repeat R] | layout [--nodes a,b,c]\n";
    return help ? 0 : 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "make-tree-trace" && argc >= 3)
      return make_tree_trace(argv[2], std::stoi(arg_value(argc, argv, "--nodes", "5000")), std::stoi(arg_value(argc, argv, "--queries", "4096")),
                             std::stoi(arg_value(argc, argv, "--steps", "8")), static_cast<uint32_t>(std::stoul(arg_value(argc, argv, "--seed", "1"))),
                             std::find(argv, argv + argc, std::string("--vary-mask")) != argv + argc);
    if (cmd == "layout") return layout_bench(arg_value(argc, argv, "--nodes", "50,100,200,400,800,1600,5000"));
    if (cmd == "step" && argc >= 3) {
      BenchApp app(argc, argv);
      const std::string size = arg_value(argc, argv, "--size", "1600x1000");
      bool prefetch = true, backward = false, per_step = false, no_follow = false;
      for (int i = 3; i < argc; ++i) {
        no_follow |= std::string(argv[i]) == "--no-follow";
        per_step |= std::string(argv[i]) == "--per-step";
        prefetch &= std::string(argv[i]) != "--no-prefetch";
        backward |= std::string(argv[i]) == "--backward";
      }
      return step_bench(argv[2], std::stoi(arg_value(argc, argv, "--repeat", "3")), std::stoi(size.substr(0, size.find('x'))),
                        std::stoi(size.substr(size.find('x') + 1)), prefetch, backward, std::stoi(arg_value(argc, argv, "--pause-ms", "0")), per_step, no_follow);
    }
  } catch (const std::exception& e) {
    std::cerr << "triescope-gui-bench: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "triescope-gui-bench: bad arguments\n";
  return 2;
}
