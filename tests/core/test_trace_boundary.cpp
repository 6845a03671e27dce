// `check` and the replay at the edges of their inputs (issue 27): header
// fields read with their type and range, depths compared in 64 bits, records
// in step order; and the streamed replay (TraceReplay::open) giving exactly
// what the in-memory one gives. Each finding's case failed on 9ae4cdc.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/analysis/mask_check.h"
#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "tests/core/sample_traces.h"
#include "tests/common/error_of.h"

using namespace triescope;
using triescope::testing::error_of;
namespace fs = std::filesystem;

namespace {

fs::path write_trace(const std::string& name, const std::string& text) {
  const fs::path d = fs::temp_directory_path() / ("triescope-boundary-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const fs::path p = d / name;
  file_write_atomic(p.string(), text);
  return p;
}

// check's error on `text`, read in memory and streamed: both must agree.
std::string check_error(const std::string& name, const std::string& text) {
  const fs::path p = write_trace(name, text);
  const std::string streamed = error_of([&] { mask_check_trace(TraceReplay::open(p.string())); });
  const std::string in_memory = error_of([&] { mask_check_trace(TraceReplay(trace_read(p.string()), p.string())); });
  CHECK(streamed == in_memory);
  return streamed;
}

const std::string kBatchHeader = R"({"kind":"header","schema":"triescope.trace","version":2,"algorithm":"batch_beam_search")";

std::string node(int64_t id, int64_t parent, int64_t depth, int64_t slot) {
  return R"({"id":)" + std::to_string(id) + R"(,"parent":)" + std::to_string(parent) + R"(,"token":1,"depth":)" + std::to_string(depth) +
         R"(,"slot":)" + std::to_string(slot) + R"(,"logprob":0.0,"status":"live"})";
}

std::string external_trace(const std::string& added) {
  return R"({"kind":"header","schema":"triescope.trace","version":2,"algorithm":"external"})"
         "\n"
         R"({"kind":"step","step":0,"phase":"prefill","added":[)" +
         added + "]}\n";
}

}  // namespace

TEST_CASE("check: a batch trace's header without config is a named error", "[trace][check]") {
  // The issue's 89-byte file: 9ae4cdc ended in "internal error", exit 3 (h.at("config")).
  const std::string text = kBatchHeader + "}\n";
  const std::string p = write_trace("noconfig.jsonl", text).string();
  CHECK(check_error("noconfig.jsonl", text) == p + ": header: missing field config");
}

TEST_CASE("check: config.beam.max_new_tokens is read with its range, the copy size in 64 bits", "[trace][check]") {
  auto header = [](const std::string& max_new) {
    return kBatchHeader + R"(,"config":{"prompt":[1,2,3],"beam":{"max_new_tokens":)" + max_new + "}}}\n";
  };
  const std::string p1 = write_trace("big.jsonl", "").string();
  // 2^32 + 5: 9ae4cdc read 5 (get<int32_t>) and reported 62 false violations.
  CHECK(check_error("big.jsonl", header("4294967301")) ==
        p1 + ": header: config.beam.max_new_tokens must be in [0, 16777216], got 4294967301");
  // INT32_MAX: 9ae4cdc overflowed prompt + max_new_tokens (UBSan, mask_check.cpp:126).
  CHECK(check_error("big.jsonl", header("2147483647")) ==
        p1 + ": header: config.beam.max_new_tokens must be in [0, 16777216], got 2147483647");
  // In range each, too big together.
  CHECK(check_error("big.jsonl", header("16777215")) ==
        p1 + ": header: config.prompt (3 tokens) + config.beam.max_new_tokens (16777215) = 16777218 slots per copy, must be in [1, 16777216]");
  CHECK(check_error("big.jsonl", header("\"7\"")) == p1 + ": header: config.beam.max_new_tokens must be an integer, got \"7\"");
  CHECK(check_error("big.jsonl", kBatchHeader + R"(,"config":{"prompt":5,"beam":{"max_new_tokens":4}}})" + "\n") ==
        p1 + ": header: config.prompt must be an array of token ids, got 5");
}

TEST_CASE("replay: depths are compared in 64 bits and never negative", "[trace][replay]") {
  // A root at depth INT32_MAX: 9ae4cdc computed its child's depth + 1 in
  // 32 bits (UBSan, trace_replay.cpp:326) and accepted a child at -2^31.
  const std::string at_max = external_trace(node(0, -1, 2147483647, 0) + "," + node(1, 0, 2147483647, 1));
  const fs::path p = write_trace("depth.jsonl", at_max);
  CHECK(error_of([&] { TraceReplay::open(p.string()).at(0); }) ==
        p.string() + ": node 1 field depth = 2147483647, its parent's depth + 1 is 2147483648");
  const std::string wrapped = external_trace(node(0, -1, 2147483647, 0) + "," + node(1, 0, -2147483648LL, 1));
  const fs::path q = write_trace("wrapped.jsonl", wrapped);
  CHECK(error_of([&] { TraceReplay::open(q.string()).at(0); }) ==
        q.string() + ":2: added[1]: field depth must be in [0, 2147483647], got -2147483648");
}

TEST_CASE("replay: records out of step order are refused when the file is opened", "[trace][replay]") {
  // 9ae4cdc: `inspect --step 1` exited 0 showing step 1 without its records.
  const std::string text = external_trace(node(0, -1, 0, 0)) + R"({"kind":"step","step":2,"phase":"forward"})" + "\n" +
                           R"({"kind":"step","step":1,"phase":"forward","added":[)" + node(1, 0, 1, 1) + "]}\n";
  const fs::path p = write_trace("order.jsonl", text);
  const std::string want = p.string() + ":4: a record of step 1 after records of step 2: records must be in ascending step order (docs/trace-format.md)";
  CHECK(error_of([&] { TraceReplay::open(p.string()); }) == want);
  CHECK(error_of([&] { TraceReplay(trace_read(p.string()), p.string()); }) == want);
}

TEST_CASE("streamed replay: the same views, errors and check report as in memory, on every bundled sample", "[trace][replay]") {
  size_t traces = 0;
  for (const auto& e : fs::directory_iterator(TRIESCOPE_SOURCE_DIR "/samples")) {
    if (e.path().extension() != ".json") continue;
    json j = json_load_file(e.path().string());
    if (triescope::testing::sample_needs_optional_model(j)) continue;
    if (j.contains("beam") && j["beam"].is_object() && j["beam"].value("max_new_tokens", 0) > 24) j["beam"]["max_new_tokens"] = 24;
    CAPTURE(e.path().filename().string());
    Sample s = sample_parse(j, e.path().string());
    const fs::path p = write_trace(e.path().stem().string() + ".jsonl", "");
    {
      TraceFileWriter w(p.string());
      std::ostringstream report;
      run_sample(s, &w, report);
      w.commit();
    }
    const TraceReplay mem(trace_read(p.string()), p.string());
    const TraceReplay file = TraceReplay::open(p.string());
    REQUIRE(file.steps() == mem.steps());
    CHECK(file.header() == mem.header());
    CHECK((file.summary() == nullptr) == (mem.summary() == nullptr));
    if (file.summary()) CHECK(*file.summary() == *mem.summary());
    CHECK(file.gc_after_forward_steps() == trace_gc_after_forward_steps(mem.records()));
    for (int32_t step : mem.steps()) {
      const StepView a = mem.at(step), b = file.at(step);
      CHECK(a.nodes.size() == b.nodes.size());
      CHECK(a.slot_to_node == b.slot_to_node);
      CHECK(a.added == b.added);
      CHECK(a.kv == b.kv);
      CHECK(a.extra == b.extra);
      CHECK(a.forward.has_value() == b.forward.has_value());
      if (a.forward && b.forward) CHECK(a.forward->mask == b.forward->mask);
    }
    const MaskCheckReport ra = mask_check_trace(mem), rb = mask_check_trace(file);
    CHECK(ra.passes == rb.passes);
    CHECK(ra.rows == rb.rows);
    CHECK(ra.violation_count == rb.violation_count);
    CHECK_THROWS_AS(file.records(), Error);
    ++traces;
  }
  CHECK(traces >= 8);
}

TEST_CASE("streamed replay: a cut-off last line is an error, or dropped with a warning", "[trace][replay]") {
  const std::string whole = external_trace(node(0, -1, 0, 0));
  const fs::path p = write_trace("cut.jsonl", whole + R"({"kind":"step","step":1,"added":[{"id":1,)");
  CHECK(error_of([&] { TraceReplay::open(p.string()); }).rfind(p.string() + ":3:", 0) == 0);
  std::string warning;
  const TraceReplay t = TraceReplay::open(p.string(), &warning);
  CHECK(warning == p.string() + ":3: the file ends inside a record (a writer that stopped mid-line?); read the 2 whole records before it");
  CHECK(t.steps() == std::vector<int32_t>{0});
}

TEST_CASE("streamed replay: a record the skim misreads is caught when it is parsed", "[trace][replay]") {
  // The index reads kind and step without building the record; a key given
  // twice, once escaped, must not make the replay read a record as another:
  // the parse refuses the duplicate.
  const std::string text = external_trace(node(0, -1, 0, 0)) + R"({"kind":"step","step":1,"\u0073tep":0})" + "\n";
  const fs::path p = write_trace("twice.jsonl", text);
  CHECK(error_of([&] { TraceReplay::open(p.string()).at(1); }) == p.string() + ":3: key \"step\" given twice in the top-level object");
}

TEST_CASE("streamed replay: the index skims records of any JSON layout as the parser reads them", "[trace][replay]") {
  // Whitespace everywhere, strings holding quotes, backslashes and brackets,
  // nested containers before kind and step, keys in any order, CRLF line ends.
  const std::string text =
      R"({"kind":"header","schema":"triescope.trace","version":2,"algorithm":"external","config":{"engine":"x\"}]{["}})"
      "\r\n"
      R"(  { "note" : "a \\\" } ] [ {" , "nested" : [ { "step" : 9 , "kind" : "gc" } , [ ] ] , "kind" : "step" , "step" : 0 ,)"
      R"( "phase" : "prefill" , "added" : [ {"id":0,"parent":-1,"token":1,"depth":0,"slot":0,"logprob":"-inf","status":"live"} ] }  )"
      "\r\n\n"
      R"({"step":1,"added":[{"id":1,"parent":0,"token":2,"depth":1,"slot":1,"logprob":-0.5,"status":"live"}],"kind":"step","phase":"forward",)"
      R"("forward":{"queries":[1],"positions":[1],"slots":[1],"mask":{"cols":2,"rows":["03"]}}})"
      "\n"
      R"({"kind":"summary","outputs":[]})"
      "\n";
  const fs::path p = write_trace("layout.jsonl", text);
  const TraceReplay mem(trace_read(p.string()), p.string());
  const TraceReplay file = TraceReplay::open(p.string());
  CHECK(file.steps() == std::vector<int32_t>{0, 1});
  CHECK(file.steps() == mem.steps());
  CHECK(file.header() == mem.header());
  const StepView a = mem.at(1), b = file.at(1);
  REQUIRE(b.nodes.size() == 2);
  CHECK(a.nodes.size() == b.nodes.size());
  CHECK(b.nodes[0].logprob == -HUGE_VAL);  // "-inf" read back
  CHECK(b.added == std::vector<int32_t>{1});
  CHECK(mask_check_trace(file).ok());
  CHECK(file.summary() != nullptr);
}

TEST_CASE("streamed check parses every record once: a malformed summary or last keyframe is still refused", "[trace][check]") {
  // The replay never needs the summary or the keyframe after the last step;
  // check must refuse them as trace_read did.
  const std::string base = external_trace(node(0, -1, 0, 0));
  const fs::path p = write_trace("summary.jsonl", base + R"({"kind":"summary","outputs":[1,,2]})" + "\n");
  CHECK(error_of([&] { mask_check_trace(TraceReplay::open(p.string())); }).rfind(p.string() + ":3:", 0) == 0);
  const fs::path q = write_trace("keyframe.jsonl", base + R"({"kind":"keyframe","step":0,"nodes":[01]})" + "\n");
  CHECK(error_of([&] { mask_check_trace(TraceReplay::open(q.string())); }).rfind(q.string() + ":3:", 0) == 0);
  // Read for one step only, as inspect does, the summary is not needed.
  CHECK(error_of([&] { TraceReplay::open(p.string()).at(0); }) == "no error");
}
