// Hugging Face Llama checkpoint directories from the CLI.
// make-checkpoint: seeded random Llama weights written as a directory
// (config.json + model.safetensors), for tests, samples and benchmarks that
// need a checkpoint on disk without downloading one.
// convert-checkpoint: a directory our loader reads (one file or shards with
// an index; F32, F16 or BF16) rewritten as one model.safetensors in one
// dtype: what the loader read, bit for bit when the dtype is F32.
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "core/config/json_reader.h"
#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/model/torch/llama_config.h"

namespace triescope::cli {

namespace {
std::string dtype_option(const ParsedArgs& p, const char* cmd) {
  const std::string dtype = p.get("dtype", "F32");
  TS_CHECK(dtype == "F32" || dtype == "F16" || dtype == "BF16", cmd << ": --dtype must be F32, F16 or BF16, got \"" << dtype << "\"");
  return dtype;
}
}  // namespace

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
  const std::string dtype = dtype_option(p, "make-checkpoint");
  llama_checkpoint_write(p.positional[1], c, llama_random_weights(c, seed, init_std), dtype);
  std::cout << "wrote " << p.positional[1] << "/config.json and model.safetensors (" << dtype << ", seed " << seed
            << ", init_std " << init_std << ")\n";
  return 0;
}

int cmd_convert_checkpoint(const Args& args) {
  namespace fs = std::filesystem;
  auto p = parse_args(args, {"dtype"}, {});
  TS_CHECK(p.positional.size() == 2, "convert-checkpoint: expected <model dir> <outdir>, got " << p.positional.size() << " arguments");
  const fs::path in(p.positional[0]), out(p.positional[1]);
  const std::string dtype = dtype_option(p, "convert-checkpoint");
  TS_CHECK(fs::weakly_canonical(in) != fs::weakly_canonical(out), "convert-checkpoint: <outdir> must differ from <model dir>");
  const std::string cfg_path = (in / "config.json").string();
  const LlamaConfig c = llama_config_load(cfg_path);
  const TensorMap w = safetensors_read_dir(in.string());
  llama_weights_check(c, w, in.string());
  // The input's config.json is kept as it is (every key, not just the ones we
  // read); only torch_dtype follows the new weights.
  nlohmann::json cj = json_load_file(cfg_path);
  cj["torch_dtype"] = dtype == "F32" ? "float32" : dtype == "F16" ? "float16" : "bfloat16";
  fs::create_directories(out);
  safetensors_write((out / "model.safetensors").string(), w, dtype);
  file_write_atomic((out / "config.json").string(), cj.dump(2) + "\n");
  std::cout << "wrote " << out.string() << "/config.json and model.safetensors (" << dtype << ", " << w.size() << " tensors)\n";
  return 0;
}

}  // namespace triescope::cli
