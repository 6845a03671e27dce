// A trace file opens streamed (issue 27: the GUI opens a big trace without
// loading all its records): the document holds no records in memory, and
// everything the panes read from it (per-step figures, step views, verify
// info, the acceptance plots, diff marks, the step JSON export) is what the
// same trace gives when held in memory.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QTemporaryDir>

#include <sstream>

#include "core/analysis/verify_info.h"
#include "core/common/error.h"
#include "core/decode/run_sample.h"
#include "core/trace/trace_diff.h"
#include "gui/main_window.h"

using namespace triescope;
using namespace triescope::gui;

namespace {

std::vector<json> sample_records(const std::string& name) {
  MemoryTraceSink sink;
  Sample s = sample_load(std::string(TRIESCOPE_SOURCE_DIR "/samples/") + name);
  std::ostringstream os;
  run_sample(s, &sink, os);
  return sink.records;
}

std::string write_trace(const QTemporaryDir& dir, const std::string& name, const std::vector<json>& records) {
  const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
  TraceFileWriter w(path);
  for (const auto& r : records) w.record(r);
  w.commit();
  return path;
}

void check_same_stats(const TraceDocument& a, const TraceDocument& b) {
  REQUIRE(a.stats.size() == b.stats.size());
  for (size_t i = 0; i < a.stats.size(); ++i) {
    CAPTURE(i);
    CHECK(a.stats[i].step == b.stats[i].step);
    CHECK(a.stats[i].slots == b.stats[i].slots);
    CHECK(a.stats[i].peak == b.stats[i].peak);
    CHECK(a.stats[i].batch_slots == b.stats[i].batch_slots);
    CHECK(a.stats[i].live_beams == b.stats[i].live_beams);
    CHECK(a.stats[i].gc == b.stats[i].gc);
    CHECK(a.stats[i].gc_after_forward == b.stats[i].gc_after_forward);
  }
  CHECK(a.step_fields == b.step_fields);
  CHECK(a.prompt_len == b.prompt_len);
}

}  // namespace

TEST_CASE("a trace file opens streamed and reads as it does in memory", "[gui][load][streamed]") {
  QTemporaryDir dir;
  for (const char* sample : {"dsbd_synthetic.json", "lookahead_repetitive.json", "synthetic_long.json", "speculative_synthetic.json"}) {
    CAPTURE(sample);
    const std::vector<json> records = sample_records(sample);
    const TraceDocumentPtr file = trace_document_load(write_trace(dir, std::string(sample) + "l", records));
    const TraceDocumentPtr memory = trace_document_from_records(records, "memory");
    REQUIRE(file->replay->streamed());
    CHECK_FALSE(memory->replay->streamed());
    CHECK_THROWS_AS(file->replay->records(), Error);  // nothing held: the panes must not need it
    check_same_stats(*file, *memory);
    REQUIRE(file->replay->steps() == memory->replay->steps());
    for (int32_t step : file->replay->steps()) {
      CAPTURE(step);
      const StepView a = file->replay->at(step), b = memory->replay->at(step);
      CHECK(a.nodes.size() == b.nodes.size());
      CHECK(a.added == b.added);
      CHECK(a.extra == b.extra);
      const VerifyInfo va = verify_info(a, *file->replay), vb = verify_info(b, *memory->replay);
      CHECK(va.kind == vb.kind);
      CHECK(va.draft == vb.draft);
      CHECK(va.verify_step == vb.verify_step);
      CHECK(va.error == vb.error);
      CHECK(va.layers.size() == vb.layers.size());
      CHECK(va.accepted_nodes == vb.accepted_nodes);
    }
    const AcceptanceSeries sa = acceptance_series(*file->replay), sb = acceptance_series(*memory->replay);
    CHECK(sa.per_step == sb.per_step);
    CHECK(sa.layers.size() == sb.layers.size());
  }
}

TEST_CASE("diff mode and the step export work on two streamed traces", "[gui][diff][streamed]") {
  QTemporaryDir dir;
  std::vector<json> a = sample_records("figure1_once_upon_a_time.json"), b = a;
  size_t step1 = 0;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i]["kind"] == "step" && b[i]["step"] == 1) step1 = i;
  REQUIRE(step1 > 0);
  const int planted = b[step1]["added"][0]["id"].get<int>();
  b[step1]["added"][0]["token"] = b[step1]["added"][0]["token"].get<int>() + 1;

  MainWindow w;
  w.setHeadless(true);
  TraceContext& ctx = w.context();
  ctx.setTraces(trace_document_load(write_trace(dir, "a.jsonl", a)), trace_document_load(write_trace(dir, "b.jsonl", b)));
  REQUIRE(ctx.doc(TraceContext::A)->replay->streamed());
  REQUIRE(ctx.diffMode());
  REQUIRE(ctx.divergences().size() == 1);
  CHECK(ctx.divergences().front().describe() == trace_diff(a, b)->describe());
  const StepMarks* m = ctx.marksAt(1);
  REQUIRE(m);
  CHECK(m->nodes == std::set<int32_t>{planted});

  // The step export reads step 1's records from the file.
  ctx.setStep(1);
  const QString out = dir.filePath("step1.json");
  QString error;
  REQUIRE(w.exportStepJson(out, &error));
  const json exported = json_load_file(out.toStdString());
  std::vector<json> expected;
  for (const json& r : a)
    if (r.contains("step") && r["step"] == 1) expected.push_back(r);
  CHECK(exported["records"] == json(expected));
}
