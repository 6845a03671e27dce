// "type": "transformer" in a sample's model object, registered with
// model_from_json through model_type_register (triescope_core never links
// LibTorch; the CLI and tests call torch_models_register()).
#include <filesystem>
#include <set>

#include "core/common/error.h"
#include "core/model/model_factory.h"
#include "core/model/torch/gguf_llama.h"
#include "core/model/torch/torch_transformer.h"
#include "core/model/tree_attention.h"

namespace triescope {

namespace fs = std::filesystem;

namespace {
// Paths in a sample are relative to the sample file's folder.
std::string resolve(const std::string& origin, const std::string& p) {
  const fs::path path(p);
  if (path.is_absolute()) return p;
  return (fs::path(origin).parent_path() / path).lexically_normal().string();
}

std::unique_ptr<Model> transformer_from_json(JsonObjectReader& r) {
  TransformerOptions opt;
  opt.device = r.get_string("device", "cpu");
  opt.attention = r.get_string("attention", "auto");
  TS_CHECK(opt.device == "cpu" || opt.device == "cuda", r.where("device") << " must be \"cpu\" or \"cuda\", got \"" << opt.device << "\"");
  TS_CHECK(opt.attention == "auto" || opt.attention == "dense" || opt.attention == "gather" || opt.attention == "tree_kernel",
           r.where("attention") << " must be \"auto\", \"dense\", \"gather\" or \"tree_kernel\", got \"" << opt.attention << "\"");
  opt.dtype = r.get_string("dtype", "float32");
  TS_CHECK(opt.dtype == "float32" || opt.dtype == "bfloat16",
           r.where("dtype") << " must be \"float32\" or \"bfloat16\", got \"" << opt.dtype << "\"");
  TS_CHECK(tree_attention_reads_dtype(opt.dtype) || opt.attention != "tree_kernel",
           r.where("dtype") << " \"bfloat16\" cannot run attention \"tree_kernel\" (the transformer's tree attention kernel reads "
                            "fp32 queries and cache): use attention \"auto\", \"dense\" or \"gather\"");
  TS_CHECK(r.has("path") != r.has("random_init"), r.origin() << ": " << r.field("path") << ": give exactly one of path (a Hugging Face model directory or a .gguf file) or random_init (a config)");
  // A draft derived from the target's weights (DSBD's transformer pair, docs/dsbd.md):
  // keep_layers L' keeps decoder layers [0, L'); perturb_std x adds N(0, x * std(w)) to every tensor.
  const bool derive = r.has("keep_layers") || r.has("perturb_std");
  TS_CHECK(!r.has("perturb_seed") || r.has("perturb_std"), r.where("perturb_seed") << " needs perturb_std (the relative noise level)");
  auto derive_weights = [&](LlamaConfig& cfg, TensorMap& w, nlohmann::json& source) {
    if (r.has("keep_layers")) {
      const auto keep = static_cast<int32_t>(r.get_int("keep_layers", 1, 1 << 20));
      llama_keep_layers(cfg, w, keep, r.where("keep_layers"));
      source["keep_layers"] = keep;
    }
    if (r.has("perturb_std")) {
      const double x = r.get_double("perturb_std", 0.0, 10.0);
      const auto ps = static_cast<uint64_t>(r.get_int("perturb_seed", 0, INT64_MAX, 0));
      llama_weights_perturb(w, x, ps);
      source["perturb_std"] = x;
      source["perturb_seed"] = ps;
    }
  };
  std::unique_ptr<TorchTransformer> m;
  if (r.has("path")) {
    // A Hugging Face directory or a llama.cpp .gguf file: config, weights and tokenizer.
    const std::string path = resolve(r.origin(), r.get_string("path"));
    LlamaConfig cfg;
    TensorMap w;
    std::shared_ptr<const BpeTokenizer> tok;
    if (fs::is_regular_file(path) && fs::path(path).extension() == ".gguf") {
      GgufLlama g = gguf_llama_load(path);
      cfg = g.config;
      w = std::move(g.weights);
      tok = std::move(g.tokenizer);
      opt.source = {{"path", path}, {"format", "gguf"}};
    } else {
      TS_CHECK(fs::is_directory(path), r.where("path") << ": \"" << path << "\" is neither a directory nor a .gguf file (bring your own model: a Hugging Face Llama-architecture directory with config.json and *.safetensors, or a llama.cpp GGUF file)");
      cfg = llama_config_load((fs::path(path) / "config.json").string());
      w = safetensors_read_dir(path);
      llama_weights_check(cfg, w, fs::exists(fs::path(path) / "model.safetensors") ? (fs::path(path) / "model.safetensors").string()
                                                                                 : (fs::path(path) / "model.safetensors.index.json").string());
      const fs::path tj = fs::path(path) / "tokenizer.json";
      if (fs::exists(tj)) tok = std::make_shared<BpeTokenizer>(BpeTokenizer::load(tj.string()));
      opt.source = {{"path", path}};
    }
    if (derive) derive_weights(cfg, w, opt.source);
    m = std::make_unique<TorchTransformer>(cfg, w, opt);
    if (tok && !r.has("tokenizer")) m->set_tokenizer(std::move(tok));
  } else {
    static const std::set<std::string> keys = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                                               "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps",
                                               "rope_theta", "max_position_embeddings", "tie_word_embeddings",
                                               "attention_bias", "eos_token_id", "model_type", "hidden_act",
                                               // harmless keys of a pasted config.json
                                               "architectures", "torch_dtype", "bos_token_id", "pad_token_id",
                                               "initializer_range", "use_cache", "transformers_version"};
    const json& cj = r.raw("random_init");
    TS_CHECK(cj.is_object(), r.where("random_init") << " must be an object of config.json keys");
    for (auto& [k, v] : cj.items()) TS_CHECK(keys.count(k), r.where("random_init") << "." << k << " is not a known config key");
    LlamaConfig cfg = llama_config_parse(cj, r.where("random_init"));
    // Random weights are allocated from the declared sizes alone: bound them (1 GiB of float32).
    constexpr int64_t kRandomInitMaxParams = int64_t{1} << 28;
    TS_CHECK(llama_param_count(cfg) <= kRandomInitMaxParams,
             r.where("random_init") << " declares " << llama_param_count(cfg) << " weights, more than a random model may hold ("
                                    << kRandomInitMaxParams << "); use a checkpoint (path) for a model that size");
    const auto seed = static_cast<uint64_t>(r.get_int("seed", 0, INT64_MAX, 0));
    const double init_std = r.get_double("init_std", 1e-6, 10.0, 0.02);
    opt.source = {{"random_init", true}, {"seed", seed}, {"init_std", init_std}};
    TensorMap w = llama_random_weights(cfg, seed, init_std);
    derive_weights(cfg, w, opt.source);
    m = std::make_unique<TorchTransformer>(cfg, w, opt);
  }
  if (r.has("tokenizer")) {
    const std::string tp = resolve(r.origin(), r.get_string("tokenizer"));
    m->set_tokenizer(std::make_shared<BpeTokenizer>(BpeTokenizer::load(tp)));
  }
  r.finish();
  return m;
}
}  // namespace

void torch_models_register() { model_type_register("transformer", &transformer_from_json); }

bool model_has_tokenizer(const Model& m) {
  const auto* t = dynamic_cast<const TorchTransformer*>(&m);
  return t != nullptr && t->tokenizer() != nullptr;
}

std::vector<int32_t> model_encode_text(const Model& m, const std::string& text) {
  TS_CHECK(model_has_tokenizer(m), "text prompt: the model has no tokenizer (a transformer with tokenizer.json is needed; give token ids instead)");
  // As transformers' tokenizer(text): the post_processor's special tokens (a BOS) added.
  auto ids = dynamic_cast<const TorchTransformer&>(m).tokenizer()->encode(text, /*add_special_tokens=*/true);
  for (size_t i = 0; i < ids.size(); ++i)
    TS_CHECK(ids[i] < m.vocab_size(), "text prompt: token " << ids[i] << " at " << i << " is outside the model's vocabulary (" << m.vocab_size() << ")");
  return ids;
}

std::string model_decode_text(const Model& m, const std::vector<int32_t>& ids) {
  TS_CHECK(model_has_tokenizer(m), "decode: the model has no tokenizer");
  return dynamic_cast<const TorchTransformer&>(m).tokenizer()->decode(ids);
}

}  // namespace triescope
