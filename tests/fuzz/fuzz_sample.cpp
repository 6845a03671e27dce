// Sample files (samples/*.json): sample_load through the algorithm registry,
// every algorithm's config section, the models it builds on the CPU backend.
#include "core/decode/run_sample.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::InputFile file(data, size);
  fuzz::accepted([&] { sample_load(file.path()); });
  return 0;
}
