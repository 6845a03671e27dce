// triescope make-checkpoint: seeded random Llama weights written as a Hugging
// Face directory (config.json + model.safetensors), for tests, samples and
// benchmarks that need a checkpoint on disk without downloading one.
#include <iostream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/model/torch/llama_config.h"

namespace triescope::cli {

int cmd_make_checkpoint(const Args& args) {
  auto p = parse_args(args, {"seed", "init-std", "dtype"}, {});
  TS_CHECK(p.positional.size() == 2, "make-checkpoint: expected <config.json> <outdir>, got " << p.positional.size() << " arguments");
  const LlamaConfig c = llama_config_load(p.positional[0]);
  uint64_t seed = 0;
  double init_std = 0.02;
  try {
    seed = std::stoull(p.get("seed", "0"));
    init_std = std::stod(p.get("init-std", "0.02"));
  } catch (const std::exception&) {
    TS_FAIL("make-checkpoint: --seed must be a non-negative integer and --init-std a number");
  }
  TS_CHECK(init_std > 0.0 && init_std <= 10.0, "make-checkpoint: --init-std must be in (0, 10], got " << init_std);
  const std::string dtype = p.get("dtype", "F32");
  TS_CHECK(dtype == "F32" || dtype == "F16" || dtype == "BF16", "make-checkpoint: --dtype must be F32, F16 or BF16, got \"" << dtype << "\"");
  llama_checkpoint_write(p.positional[1], c, llama_random_weights(c, seed, init_std), dtype);
  std::cout << "wrote " << p.positional[1] << "/config.json and model.safetensors (" << dtype << ", seed " << seed
            << ", init_std " << init_std << ")\n";
  return 0;
}

}  // namespace triescope::cli
