// `triescope check`'s replay (mask_check_trace) over a trace, read both ways:
// in memory (trace_read + TraceReplay) and streamed (TraceReplay::open, the
// index the CLI uses). Either may refuse the input with Error; when both read
// it, their reports must agree. (Their errors may differ: the streamed reader
// names a record's file line where the in-memory one counts records, and it
// refuses a record whose kind or step its skim and the parser read
// differently; neither is a finding.)
#include <string>

#include "core/analysis/mask_check.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

namespace {
struct Outcome {
  std::string error;  // "" when accepted
  MaskCheckReport rep;
};
template <class F>
Outcome outcome(F&& check) {
  Outcome o;
  try {
    o.rep = check();
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::InputFile file(data, size);
  Outcome mem, streamed;
  fuzz::accepted([&] {
    mem = outcome([&] { return mask_check_trace(TraceReplay(trace_read(file.path()), file.path()), 8); });
    streamed = outcome([&] { return mask_check_trace(TraceReplay::open(file.path()), 8); });
  });
  if (mem.error.empty() && streamed.error.empty()) {
    FUZZ_CHECK(mem.rep.passes == streamed.rep.passes && mem.rep.rows == streamed.rep.rows &&
                   mem.rep.violation_count == streamed.rep.violation_count && mem.rep.layout == streamed.rep.layout,
               "streamed check report differs from the in-memory one");
    for (size_t i = 0; i < mem.rep.violations.size(); ++i)
      FUZZ_CHECK(mem.rep.violations[i].describe() == streamed.rep.violations[i].describe(), "violation " + std::to_string(i) + " differs");
  }
  return 0;
}
