// The toy algorithm's trace (toy_algorithm.cpp, run through the CLI) opens in
// the GUI headless and steps through: no pane needs to know the algorithm.
#include <catch2/catch.hpp>

#include <QApplication>

#include <filesystem>
#include <fstream>

#include "app/commands.h"
#include "core/config/json_reader.h"
#include "gui/main_window.h"
#include "gui/panes/trie_view.h"
#include "gui/trace_document.h"

using namespace triescope;
using namespace triescope::gui;

TEST_CASE("registry: the toy algorithm's trace opens and steps in the GUI", "[registry][gui]") {
  namespace fs = std::filesystem;
  const fs::path d = fs::path(TRIESCOPE_BINARY_DIR) / "tests" / "registry_work" / "toy_gui";
  fs::remove_all(d);
  fs::create_directories(d);
  json j = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/lookahead_repetitive.json");
  j.erase("lookahead");
  j["algorithm"] = "toy_two_branch";
  j["toy"] = {{"max_new_tokens", 6}};
  std::ofstream(d / "toy.json") << j.dump();
  const std::string out = (d / "toy.jsonl").string();
  std::string a0 = "triescope", a1 = "run", a2 = (d / "toy.json").string(), a3 = "--out", a4 = out, a5 = "--quiet";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), a5.data()};
  REQUIRE(cli::cli_main(6, argv) == 0);

  MainWindow w;
  w.setHeadless(true);
  w.resize(1400, 900);
  w.show();
  TraceContext& ctx = w.context();
  QStringList errors;
  QObject::connect(&ctx, &TraceContext::errorOccurred, [&](const QString& m) { errors << m; });
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
