// A sample from file to decode: sample_load, then run_sample into memory,
// under a small memory budget (TRIESCOPE_MEMORY_BUDGET) so a sample asking
// for more is refused by name before it allocates (docs/reliability.md,
// "Resource budget"). Decodes are kept short: max_new_tokens is capped (a
// long decode is time, not a finding). The trace it writes must read back.
#include <cstdlib>
#include <sstream>

#include "core/analysis/mask_check.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool env = [] { return ::setenv("TRIESCOPE_MEMORY_BUDGET", "256M", 1) == 0; }();
  (void)env;
  const fuzz::InputFile file(data, size);
  json j;
  if (!fuzz::accepted([&] { j = json_load_file(file.path()); })) return 0;
  if (j.is_object())
    for (const char* section : {"beam", "sampling", "speculative", "dsbd", "lookahead", "multigen"})
      if (j.contains(section) && j[section].is_object() && j[section].contains("max_new_tokens") &&
          j[section]["max_new_tokens"].is_number_integer() && j[section]["max_new_tokens"].get<int64_t>() > 12)
        j[section]["max_new_tokens"] = 12;
  fuzz::accepted([&] {
    const Sample s = sample_parse(j, file.path());
    MemoryTraceSink sink;
    std::ostringstream report;
    run_sample(s, &sink, report);
    // What a decoder records, the reader and check take.
    const TraceReplay t(sink.records, "recorded");
    (void)mask_check_trace(t, 4);
  });
  return 0;
}
