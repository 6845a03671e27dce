// Traces (JSON Lines, docs/trace-format.md): the reader, the replay that
// rebuilds every step from keyframes, the analyses inspect and the GUI draw,
// `triescope inspect` itself, and (TRIESCOPE_FUZZ_GUI) the GUI's headless
// model. Differentials: a trace re-serialised parses to the same records and
// diffs equal to itself; advance() from the previous step equals at().
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "app/commands.h"
#include "core/analysis/forward_layout.h"
#include "core/analysis/verify_info.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_replay.h"
#include "tests/fuzz/fuzz_target.h"
#ifdef TRIESCOPE_FUZZ_GUI
#include <QCoreApplication>

#include "gui/trace_context.h"
#include "gui/trace_document.h"
#endif

using namespace triescope;
using fuzz::accepted;

namespace {

bool same_nodes(const std::vector<TreeNode>& a, const std::vector<TreeNode>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].id != b[i].id || a[i].parent != b[i].parent || a[i].token != b[i].token || a[i].depth != b[i].depth ||
        a[i].slot != b[i].slot || a[i].logprob != b[i].logprob || a[i].status != b[i].status)
      return false;
  return true;
}

bool same_view(const StepView& a, const StepView& b) {
  const bool fwd = a.forward.has_value() == b.forward.has_value() &&
                   (!a.forward || (a.forward->queries == b.forward->queries && a.forward->positions == b.forward->positions &&
                                   a.forward->slots == b.forward->slots && a.forward->mask == b.forward->mask));
  return a.step == b.step && a.phase == b.phase && same_nodes(a.nodes, b.nodes) && a.slot_to_node == b.slot_to_node &&
         a.added == b.added && a.gc_moves == b.gc_moves && a.gc_slots_before == b.gc_slots_before && a.kv == b.kv &&
         a.chosen == b.chosen && a.extra == b.extra && fwd;
}

// `triescope inspect FILE --step N` in-process, its output dropped: only an
// Error may leave it (cli_main would turn anything else into exit 3).
void inspect(const std::string& path, int32_t step) {
  std::ostringstream sink;
  auto* out = std::cout.rdbuf(sink.rdbuf());
  auto* err = std::cerr.rdbuf(sink.rdbuf());
  accepted([&] { cli::cmd_inspect({path, "--step", std::to_string(step)}); });
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
}

#ifdef TRIESCOPE_FUZZ_GUI
// The GUI's model: the document (plots' figures), then every step through
// TraceContext (which replays and lays out), alone and in diff mode.
void gui_model(const std::vector<json>& records) {
  static int argc = 1;
  static char name[] = "fuzz";
  static char* argv[] = {name, nullptr};
  static QCoreApplication* app = QCoreApplication::instance() ? nullptr : new QCoreApplication(argc, argv);
  (void)app;
  gui::TraceDocumentPtr doc;
  if (!accepted([&] { doc = gui::trace_document_from_records(records, "fuzz.jsonl"); })) return;
  for (bool diff : {false, true}) {
    gui::TraceContext ctx;
    ctx.setPrefetchEnabled(false);
    accepted([&] {
      ctx.setTraces(doc, diff ? doc : nullptr);
      for (size_t i = 0; i < ctx.steps().size(); ++i) ctx.setStepIndex(static_cast<int32_t>(i));
    });
  }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_string(data, size);
  std::vector<json> records;
  std::string warning;
  if (!accepted([&] { records = trace_parse(text, "fuzz.jsonl", &warning); })) return 0;

  std::string again;
  for (const json& r : records) again += r.dump() + "\n";
  std::vector<json> reread;
  FUZZ_CHECK(accepted([&] { reread = trace_parse(again, "rewritten.jsonl"); }), "a trace the reader accepted is refused once re-serialised");
  FUZZ_CHECK(reread == records, "a re-serialised trace parses to other records");
  accepted([&] { FUZZ_CHECK(trace_diff_all(records, reread).empty(), "a trace diffs unequal to its re-serialisation"); });

  std::unique_ptr<TraceReplay> t;
  if (!accepted([&] { t = std::make_unique<TraceReplay>(records, "fuzz.jsonl"); })) return 0;
  std::set<int32_t> gc_after;
  accepted([&] { gc_after = trace_gc_after_forward_steps(records); });
  std::optional<StepView> prev;
  for (int32_t step : t->steps()) {
    StepView v;
    const bool ok = accepted([&] { v = t->at(step); });
    if (prev) {
      StepView w;
      const bool ok_advance = accepted([&] { t->advance_into(*prev, step, w); });
      FUZZ_CHECK(ok == ok_advance, "at() and advance() disagree on whether step " + std::to_string(step) + " is well formed");
      FUZZ_CHECK(!ok || same_view(v, w), "advance() to step " + std::to_string(step) + " differs from at()");
    }
    if (!ok) {
      prev.reset();
      continue;
    }
    accepted([&] { verify_info(v, *t); });
    accepted([&] { forward_layout(v, gc_after.count(step) > 0); });
    prev = std::move(v);
  }
  accepted([&] { acceptance_series(*t); });

  const fuzz::InputFile file(data, size);
  if (!t->steps().empty()) {
    inspect(file.path(), t->steps().front());
    inspect(file.path(), t->last_step());
  }
#ifdef TRIESCOPE_FUZZ_GUI
  gui_model(records);
#endif
  return 0;
}
