// The packed record index (TraceRecordIndex) and the file index over it
// (TraceFileIndex): every field read back as pushed whatever its pattern,
// a few bits a record for a trace's usual pattern (issue 36: the index was a
// 32-byte struct a record, and copied), lengths derived from the next
// record's offset across blank lines, CRLF and an unterminated last line,
// and errors still naming path:line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <random>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/trace/trace_index.h"
#include "core/trace/trace_replay.h"
#include "tests/common/error_of.h"

using namespace triescope;
using triescope::testing::error_of;
namespace fs = std::filesystem;

namespace {

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path d = fs::temp_directory_path() / ("triescope-index-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const fs::path p = d / name;
  file_write_atomic(p.string(), text);
  return p;
}

const char* kHeader =
    R"({"kind":"header","schema":"triescope.trace","version":2,"algorithm":"external","backend":"external","config":{"engine":"t"},"model":{"type":"external"}})";

}  // namespace

TEST_CASE("the packed index reads back every field as pushed", "[trace][index]") {
  std::mt19937_64 rng(7);
  for (const int pattern : {0, 1, 2}) {
    CAPTURE(pattern);
    TraceRecordIndex idx;
    std::vector<TraceRecordEntry> want;
    uint64_t offset = 0, line = 1;
    int32_t step = 0;
    // Whole chunks and one being filled; the usual pattern long enough to weigh.
    const size_t n = (pattern == 0 ? 100 : 3) * TraceRecordIndex::kChunk + 17;
    for (size_t i = 0; i < n; ++i) {
      TraceRecordEntry e;
      e.offset = offset;
      e.line = line;
      if (pattern == 0) {  // a trace's usual run: one step a record, 31-32 bytes each
        e.kind = TraceRecordKind::step;
        e.step = step++;
        offset += 31 + (i % 7 == 0);
        line += 1;
      } else {  // anything: gaps up to 2^40 bytes, blank lines, steps out of order, no step, every kind
        e.kind = static_cast<TraceRecordKind>(rng() % 6);
        e.step = rng() % 5 == 0 ? -1 : static_cast<int32_t>(pattern == 1 ? rng() % 1000 : rng() % (uint64_t{1} << 31));
        offset += 1 + rng() % (rng() % 50 == 0 ? uint64_t{1} << 40 : 100000);
        line += 1 + (rng() % 10 == 0 ? rng() % 1000000 : 0);
      }
      idx.push_back(e);
      want.push_back(e);
    }
    REQUIRE(idx.size() == n);
    for (size_t i = 0; i < n; ++i) {
      const TraceRecordEntry got = idx[i];
      CAPTURE(i);
      REQUIRE(got.offset == want[i].offset);
      REQUIRE(got.line == want[i].line);
      REQUIRE(got.step == want[i].step);
      REQUIRE(got.kind == want[i].kind);
      REQUIRE(idx.step(i) == want[i].step);
      REQUIRE(idx.kind(i) == want[i].kind);
    }
    // The usual pattern: about a byte a record (the offsets' residuals), not a
    // struct; the chunk being filled is a fixed 32 KB.
    if (pattern == 0) CHECK(idx.memory_bytes() < 2 * n + 40000);
  }
}

TEST_CASE("upper_bound_step finds the first record after a step", "[trace][index]") {
  // Steps ascending with runs of 0-3 records a step; a summary (no step)
  // here and there counts as the step of the record before it.
  TraceRecordIndex idx;
  std::vector<int32_t> order;  // the step a record counts as
  std::mt19937 rng(3);
  idx.push_back({0, 1, -1, TraceRecordKind::header});
  order.push_back(-1);
  for (int32_t s = 0; s < 5000; ++s)
    for (unsigned k = rng() % 4; k-- > 0;) {
      const bool summary = rng() % 97 == 0;
      idx.push_back({0, idx.size() + 1, summary ? -1 : s, summary ? TraceRecordKind::summary : TraceRecordKind::gc});
      order.push_back(summary ? order.back() : s);
    }
  for (int32_t s = -1; s <= 5001; ++s)
    for (size_t lo : {size_t{1}, size_t{100}, order.size()}) {
      size_t want = lo;
      while (want < order.size() && order[want] <= s) ++want;
      CAPTURE(s, lo);
      REQUIRE(idx.upper_bound_step(s, lo) == want);
    }
}

TEST_CASE("record lengths come from the next record's offset", "[trace][index]") {
  // Blank lines between records, a CRLF record, and a last line with no newline.
  const std::string text = std::string(kHeader) + "\n\n\n" + R"({"kind":"step","step":0})" + "\r\n" + "\n" +
                           R"({"kind":"step","step":1,"phase":"x"})" + "\n" + R"({"kind":"summary","outputs":[]})";
  const fs::path p = write_file("blank.jsonl", text);
  const auto idx = TraceFileIndex::open(p.string());
  REQUIRE(idx->size() == 4);
  CHECK(idx->index().line(1) == 4);
  CHECK(idx->index().line(2) == 6);
  CHECK(idx->index().line(3) == 7);
  CHECK(idx->length(0) == std::string(kHeader).size());
  CHECK(idx->length(1) == std::string(R"({"kind":"step","step":0})").size() + 1);  // the \r is the record's
  CHECK(idx->length(3) == std::string(R"({"kind":"summary","outputs":[]})").size());
  nlohmann::json r;
  idx->read(2, r);
  CHECK(r["phase"] == "x");
  idx->read(3, r);
  CHECK(r["kind"] == "summary");
  const TraceReplay t = TraceReplay::open(p.string());
  CHECK(t.steps() == std::vector<int32_t>{0, 1});
  CHECK(t.at(1).phase == "x");
}

TEST_CASE("errors of a streamed record name its line after blank lines", "[trace][index]") {
  // The body of step 2's record is bad JSON past what the skim walks: found when the step is replayed.
  const std::string text = std::string(kHeader) + "\n" + R"({"kind":"step","step":0})" + "\n\n\n" +
                           R"({"kind":"step","step":1,"added":[{"id":0,"parent":-1,"token":1,"depth":0,"slot":0,"logprob":"x","status":"live"}]})" +
                           "\n" + R"({"kind":"summary","outputs":[]})" + "\n";
  const fs::path p = write_file("bad.jsonl", text);
  const TraceReplay t = TraceReplay::open(p.string());
  const std::string e = error_of([&] { t.at(1); });
  CHECK(e.find(p.string() + ":5") != std::string::npos);
  CHECK(e.find("logprob") != std::string::npos);
}
