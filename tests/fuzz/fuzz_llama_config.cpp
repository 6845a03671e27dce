// Hugging Face config.json of a Llama-architecture model (core/model/torch/llama_config.h).
// Differential: an accepted config written by to_json() parses to the same config.
#include "core/config/json_reader.h"
#include "core/model/torch/llama_config.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LlamaConfig c;
  if (!fuzz::accepted([&] { c = llama_config_parse(json_parse_text(fuzz::as_string(data, size), "config.json"), "config.json"); }))
    return 0;
  LlamaConfig again;
  FUZZ_CHECK(fuzz::accepted([&] { again = llama_config_parse(c.to_json(), "rewritten config.json"); }),
             "a config read is refused once written");
  FUZZ_CHECK(again.to_json() == c.to_json(), "a config written and read again differs");
  FUZZ_CHECK(llama_param_count(c) > 0, "an accepted config holds no weights");
  return 0;
}
