// GGUF files (core/model/torch/gguf.h): header, metadata of every value type,
// tensor infos, alignment; then a Llama's config, its tokenizer and its
// weights (dequantised) read from them, as gguf_llama_load does.
#include "core/model/torch/bpe_tokenizer.h"
#include "core/model/torch/gguf.h"
#include "core/model/torch/gguf_llama.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<GgufFile> f;
  if (!fuzz::accepted([&] { f.emplace(GgufFile::parse(fuzz::as_string(data, size), "fuzz.gguf")); })) return 0;
  fuzz::accepted([&] { gguf_tokenizer(*f); });
  LlamaConfig c;
  if (!fuzz::accepted([&] { c = gguf_llama_config(*f); })) return 0;
  fuzz::accepted([&] {
    const TensorMap w = gguf_llama_weights(*f, c);
    for (const auto& [name, t] : w)
      FUZZ_CHECK(static_cast<int64_t>(t.data.size()) == t.numel(), "tensor \"" + name + "\" holds other than its shape's count");
  });
  return 0;
}
