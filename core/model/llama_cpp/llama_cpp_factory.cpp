// "type": "llama_cpp" in a sample's model object, registered with
// model_from_json through model_type_register (triescope_core never links
// llama.cpp; the CLI and tests call llama_cpp_models_register()).
#include <filesystem>

#include "core/common/error.h"
#include "core/model/llama_cpp/llama_cpp_model.h"
#include "core/model/model_factory.h"

namespace triescope {

namespace {

std::unique_ptr<Model> llama_cpp_from_json(JsonObjectReader& r) {
  namespace fs = std::filesystem;
  LlamaCppOptions opt;
  const fs::path p(r.get_string("path"));
  // Paths in a sample are relative to the sample file's folder.
  opt.path = p.is_absolute() ? p.string() : (fs::path(r.origin()).parent_path() / p).lexically_normal().string();
  TS_CHECK(fs::is_regular_file(opt.path), r.where("path") << ": \"" << opt.path << "\" is not a file (a llama.cpp .gguf model; scripts/install-deps.sh puts SmolLM2 in .cache/models/)");
  opt.n_ctx = static_cast<int32_t>(r.get_int("n_ctx", 256, 1 << 20, opt.n_ctx));  // >= n_seq_max: llama.cpp reserves an output per seq id
  opt.n_ubatch = static_cast<int32_t>(r.get_int("n_ubatch", 1, 1 << 20, opt.n_ubatch));
  opt.flash_attn = r.get_bool("flash_attn", opt.flash_attn);
  opt.threads = static_cast<int32_t>(r.get_int("threads", 0, 1024, opt.threads));
  opt.check_cells = r.get_bool("check_cells", opt.check_cells);
  r.finish();
  return std::make_unique<LlamaCppModel>(std::move(opt));
}

}  // namespace

void llama_cpp_models_register() { model_type_register("llama_cpp", &llama_cpp_from_json); }

}  // namespace triescope
