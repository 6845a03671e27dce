// The toy algorithm's trace (toy_algorithm.cpp, run through the CLI) opens in
// the GUI headless and steps through: no pane needs to know the algorithm.
// The toy drafting algorithm's (toy_drafting.h) verify steps are drawn by the
// verification pane from its kind's rows; an unregistered kind is refused.
#include <catch2/catch.hpp>

#include <QApplication>

#include <filesystem>
#include <fstream>

#include "app/commands.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"
#include "gui/main_window.h"
#include "gui/panes/plots_pane.h"
#include "gui/panes/trie_view.h"
#include "gui/panes/verify_pane.h"
#include "gui/trace_document.h"

using namespace triescope;
using namespace triescope::gui;

namespace {

// lookahead_repetitive.json as `algorithm` with its `section`, run through
// the CLI into registry_work/<dir>/toy.jsonl; returns that path.
std::string run_toy(const std::string& dir, const std::string& algorithm, const char* section, const json& config) {
  namespace fs = std::filesystem;
  const fs::path d = fs::path(TRIESCOPE_BINARY_DIR) / "tests" / "registry_work" / dir;
  fs::remove_all(d);
  fs::create_directories(d);
  json j = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/lookahead_repetitive.json");
  j.erase("lookahead");
  j["algorithm"] = algorithm;
  j[section] = config;
  std::ofstream(d / "toy.json") << j.dump();
  const std::string out = (d / "toy.jsonl").string();
  std::string a0 = "triescope", a1 = "run", a2 = (d / "toy.json").string(), a3 = "--out", a4 = out, a5 = "--quiet";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), a5.data()};
  REQUIRE(cli::cli_main(6, argv) == 0);
  return out;
}

// A headless main window that collects the errors its context reports.
struct HeadlessWindow {
  MainWindow w;
  QStringList errors;
  HeadlessWindow() {
    w.setHeadless(true);
    w.resize(1400, 900);
    w.show();
    QObject::connect(&w.context(), &TraceContext::errorOccurred, [this](const QString& m) { errors << m; });
  }
};

}  // namespace

TEST_CASE("registry: the toy algorithm's trace opens and steps in the GUI", "[registry][gui]") {
  const std::string out = run_toy("toy_gui", "toy_two_branch", "toy", {{"max_new_tokens", 6}});
  HeadlessWindow hw;
  MainWindow& w = hw.w;
  TraceContext& ctx = w.context();
  const QStringList& errors = hw.errors;
  ctx.setTraces(trace_document_load(out));
  QApplication::processEvents();
  REQUIRE(errors.isEmpty());
  REQUIRE(ctx.steps().size() == 7);
  for (size_t i = 0; i < ctx.steps().size(); ++i) {
    ctx.setStepIndex(static_cast<int32_t>(i));
    QApplication::processEvents();
    CAPTURE(i);
    CHECK(errors.isEmpty());
    CHECK(w.trieView()->shownNodeCount() > 0);
  }
  CHECK(w.statusText().contains(QStringLiteral("toy_two_branch")));
}

TEST_CASE("registry: the toy drafting algorithm's verify steps are drawn from its kind's rows", "[registry][gui][verify]") {
  const std::string out = run_toy("toy_guess_gui", "toy_guess", "toy_guess", {{"iterations", 6}});
  HeadlessWindow hw;
  MainWindow& w = hw.w;
  TraceContext& ctx = w.context();
  const QStringList& errors = hw.errors;
  bool fronted = false;
  QObject::connect(w.verifyPane(), &VerifyPane::speculativeTraceLoaded, [&] { fronted = true; });
  ctx.setTraces(trace_document_load(out));
  QApplication::processEvents();
  REQUIRE(errors.isEmpty());
  CHECK(fronted);  // the header's verify_kind brings the pane to the front
  CHECK(w.plotsPane()->hasAcceptance());
  VerifyPane* pane = w.verifyPane();
  for (int32_t step = 1; step <= 6; ++step) {
    CAPTURE(step);
    ctx.setStep(step);
    pane->ensureUpToDate();
    QApplication::processEvents();
    REQUIRE(pane->hasData());
    CHECK(pane->info().error.empty());
    CHECK(pane->summaryText().contains(QStringLiteral("<b>Toy guess</b>: %1 token(s)").arg(pane->info().steps)));
    REQUIRE(pane->canvas()->chips().size() == 1);
    CHECK(pane->canvas()->chips()[0].c.node == pane->info().layers[0].chips[0].node);
    CHECK(pane->canvas()->chips()[0].line2 == QStringLiteral("#%1").arg(pane->info().layers[0].chips[0].node));
  }

  // The same trace naming a kind nobody registered is refused when loaded.
  std::vector<json> records = trace_read(out);
  records.front()["verify_kind"] = "toy_guess_v2";
  CHECK_THROWS_WITH(trace_document_from_records(records, "renamed.jsonl"),
                    Catch::Contains("renamed.jsonl") && Catch::Contains("unknown verification kind \"toy_guess_v2\""));
}
