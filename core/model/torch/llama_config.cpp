#include "core/model/torch/llama_config.h"

#include <cmath>
#include <filesystem>
#include <iterator>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/common/hash.h"
#include "core/common/list_text.h"
#include "core/config/json_reader.h"

namespace triescope {

nlohmann::json LlamaConfig::to_json() const {
  // HF's Llama biases o_proj whenever attention_bias is set; a config with
  // q/k/v biases only is a Qwen2 one.
  nlohmann::json j = {{"model_type", attention_bias && !o_proj_bias ? "qwen2" : "llama"},
                      {"architectures", {"LlamaForCausalLM"}},
                      {"vocab_size", vocab_size},
                      {"hidden_size", hidden_size},
                      {"intermediate_size", intermediate_size},
                      {"num_hidden_layers", num_hidden_layers},
                      {"num_attention_heads", num_attention_heads},
                      {"num_key_value_heads", num_key_value_heads},
                      {"head_dim", head_dim},
                      {"rms_norm_eps", rms_norm_eps},
                      {"rope_theta", rope_theta},
                      {"max_position_embeddings", max_position_embeddings},
                      {"tie_word_embeddings", tie_word_embeddings},
                      {"attention_bias", attention_bias},
                      {"hidden_act", "silu"},
                      {"torch_dtype", "float32"}};
  if (eos_token_id >= 0) j["eos_token_id"] = eos_token_id;
  return j;
}

LlamaConfig llama_config_parse(const nlohmann::json& j, const std::string& origin) {
  TS_CHECK(j.is_object(), origin << ": config must be a JSON object");
  // transformers writes null for an option left unset: read as absent. The
  // many keys this reader does not use (architectures, transformers_version,
  // token ids of other roles...) are allowed: no finish().
  json set_fields = json::object();
  for (const auto& [key, value] : j.items()) {
    if (!value.is_null()) set_fields[key] = value;
  }
  JsonObjectReader r(set_fields, origin);
  const std::string model_type = r.get_string("model_type", "llama");
  TS_CHECK(model_type == "llama" || model_type == "qwen2" || model_type == "mistral",
           r.where("model_type") << " \"" << model_type << "\" is not a Llama-architecture model (llama, qwen2, mistral)");
  LlamaConfig c;
  c.vocab_size = static_cast<int32_t>(r.get_int("vocab_size", 2, 1 << 22));
  c.hidden_size = static_cast<int32_t>(r.get_int("hidden_size", 1, 1 << 16));
  c.intermediate_size = static_cast<int32_t>(r.get_int("intermediate_size", 1, 1 << 18));
  c.num_hidden_layers = static_cast<int32_t>(r.get_int("num_hidden_layers", 1, 1024));
  c.num_attention_heads = static_cast<int32_t>(r.get_int("num_attention_heads", 1, 1024));
  c.num_key_value_heads = static_cast<int32_t>(r.get_int("num_key_value_heads", 1, 1024, c.num_attention_heads));
  TS_CHECK(c.num_attention_heads % c.num_key_value_heads == 0,
           origin << ": num_attention_heads (" << c.num_attention_heads << ") must be a multiple of num_key_value_heads ("
                  << c.num_key_value_heads << ")");
  if (r.has("head_dim")) {
    c.head_dim = static_cast<int32_t>(r.get_int("head_dim", 2, 4096));
  } else {
    TS_CHECK(c.hidden_size % c.num_attention_heads == 0, origin << ": hidden_size (" << c.hidden_size
                                                                << ") must be a multiple of num_attention_heads ("
                                                                << c.num_attention_heads << ")");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  TS_CHECK(c.head_dim % 2 == 0, origin << ": head_dim must be even for rotary embeddings, got " << c.head_dim);
  c.rms_norm_eps = r.get_double("rms_norm_eps", 0.0, 1.0, 1e-6);
  c.rope_theta = r.get_double("rope_theta", 1.0, 1e12, 10000.0);
  c.max_position_embeddings = static_cast<int32_t>(r.get_int("max_position_embeddings", 1, 1 << 24, 2048));
  c.tie_word_embeddings = r.get_bool("tie_word_embeddings", false);
  c.attention_bias = r.get_bool("attention_bias", model_type == "qwen2");
  c.o_proj_bias = c.attention_bias && model_type == "llama";  // LlamaAttention: bias=attention_bias on all four projections
  const std::string act = r.get_string("hidden_act", "silu");
  TS_CHECK(act == "silu", r.where("hidden_act") << " must be \"silu\" (SwiGLU), got \"" << act << "\"");
  TS_CHECK(!r.get_bool("mlp_bias", false), r.where("mlp_bias") << " is not implemented (Llama MLPs have no biases)");
  TS_CHECK(!r.has("rope_scaling"), r.where("rope_scaling") << " " << json_brief(r.raw("rope_scaling"))
                                                           << " is not implemented (plain RoPE only)");
  if (r.get_bool("use_sliding_window", false) || (model_type == "mistral" && r.has("sliding_window"))) {
    TS_FAIL(origin << ": sliding-window attention is not implemented");
  }
  if (r.has("eos_token_id")) {
    // One id or a list of them (the first is used); each a token of the vocabulary.
    const json& e = r.raw("eos_token_id");
    TS_CHECK(e.is_number_integer() || (e.is_array() && !e.empty()),
             r.where("eos_token_id") << " must be a token id or a non-empty list of them, got " << json_brief(e));
    for (size_t i = 0; i < (e.is_array() ? e.size() : 1); ++i) {
      const json& id = e.is_array() ? e[i] : e;
      const auto x = json_int_in(id, 0, c.vocab_size - 1);
      TS_CHECK(x, r.where("eos_token_id") << (e.is_array() ? "[" + std::to_string(i) + "]" : std::string()) << " must be in [0, "
                                          << c.vocab_size - 1 << "] (vocab_size - 1), got " << json_brief(id));
      if (i == 0) c.eos_token_id = static_cast<int32_t>(*x);
    }
  }
  return c;
}

LlamaConfig llama_config_load(const std::string& path) {
  return reader_boundary(path, [&] { return llama_config_parse(json_load_file(path), path); });
}

int64_t llama_param_count(const LlamaConfig& c) {
  int64_t n = 0;
  for (const auto& [name, shape] : llama_tensor_shapes(c)) {
    int64_t k = 1;
    for (int64_t d : shape) k *= d;  // each dim < 2^24 and at most two: no overflow
    n += k;
  }
  return n;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> llama_tensor_shapes(const LlamaConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const int64_t qd = int64_t{c.num_attention_heads} * c.head_dim, kvd = int64_t{c.num_key_value_heads} * c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> s;
  s.push_back({"model.embed_tokens.weight", {V, H}});
  for (int32_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s.push_back({p + "input_layernorm.weight", {H}});
    s.push_back({p + "self_attn.q_proj.weight", {qd, H}});
    s.push_back({p + "self_attn.k_proj.weight", {kvd, H}});
    s.push_back({p + "self_attn.v_proj.weight", {kvd, H}});
    if (c.attention_bias) {
      s.push_back({p + "self_attn.q_proj.bias", {qd}});
      s.push_back({p + "self_attn.k_proj.bias", {kvd}});
      s.push_back({p + "self_attn.v_proj.bias", {kvd}});
    }
    s.push_back({p + "self_attn.o_proj.weight", {H, qd}});
    if (c.o_proj_bias) s.push_back({p + "self_attn.o_proj.bias", {H}});
    s.push_back({p + "post_attention_layernorm.weight", {H}});
    s.push_back({p + "mlp.gate_proj.weight", {I, H}});
    s.push_back({p + "mlp.up_proj.weight", {I, H}});
    s.push_back({p + "mlp.down_proj.weight", {H, I}});
  }
  s.push_back({"model.norm.weight", {H}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {V, H}});
  return s;
}

void llama_weights_check(const LlamaConfig& c, const TensorMap& w, const std::string& origin) {
  for (const auto& [name, shape] : llama_tensor_shapes(c)) {
    auto it = w.find(name);
    TS_CHECK(it != w.end(), origin << ": tensor \"" << name << "\" is missing (expected shape " << list_text(shape) << ")");
    TS_CHECK(it->second.shape == shape, origin << ": tensor \"" << name << "\" has shape " << list_text(it->second.shape)
                                               << ", the config implies " << list_text(shape));
  }
}

TensorMap llama_random_weights(const LlamaConfig& c, uint64_t seed, double init_std) {
  SplitMix64 rng{seed};
  TensorMap w;
  for (const auto& [name, shape] : llama_tensor_shapes(c)) {
    HostTensor t;
    t.shape = shape;
    t.data.resize(static_cast<size_t>(t.numel()));
    if (name.find("layernorm") != std::string::npos || name == "model.norm.weight") {
      std::fill(t.data.begin(), t.data.end(), 1.0f);
    } else {
      for (size_t i = 0; i < t.data.size(); i += 2) {  // Box-Muller: two normals per draw
        const double r = std::sqrt(-2.0 * std::log(rng.uniform())), a = 2.0 * M_PI * rng.uniform();
        t.data[i] = static_cast<float>(init_std * r * std::cos(a));
        if (i + 1 < t.data.size()) t.data[i + 1] = static_cast<float>(init_std * r * std::sin(a));
      }
    }
    w.emplace(name, std::move(t));
  }
  return w;
}

namespace {
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}
}  // namespace

void llama_keep_layers(LlamaConfig& c, TensorMap& w, int32_t keep, const std::string& origin) {
  TS_CHECK(keep >= 1 && keep <= c.num_hidden_layers,
           origin << " = " << keep << " must be in [1, num_hidden_layers = " << c.num_hidden_layers << "]");
  for (int32_t l = keep; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (auto it = w.begin(); it != w.end();)
      it = it->first.rfind(p, 0) == 0 ? w.erase(it) : std::next(it);
  }
  c.num_hidden_layers = keep;
}

void llama_weights_perturb(TensorMap& w, double rel_std, uint64_t seed) {
  TS_CHECK(std::isfinite(rel_std) && rel_std >= 0.0, "weight perturbation: relative std " << rel_std << " must be finite and >= 0");
  for (auto& [name, t] : w) {
    const size_t n = t.data.size();
    if (n == 0) continue;
    double mean = 0.0, var = 0.0;
    for (float v : t.data) mean += v;
    mean /= static_cast<double>(n);
    for (float v : t.data) var += (v - mean) * (v - mean);
    const double sd = rel_std * std::sqrt(var / static_cast<double>(n));
    SplitMix64 g{seed ^ fnv1a(name)};
    for (size_t i = 0; i < n; i += 2) {
      const double r = std::sqrt(-2.0 * std::log(g.uniform())), a = 2.0 * M_PI * g.uniform();
      t.data[i] = static_cast<float>(t.data[i] + sd * r * std::cos(a));
      if (i + 1 < n) t.data[i + 1] = static_cast<float>(t.data[i + 1] + sd * r * std::sin(a));
    }
  }
}

void llama_checkpoint_write(const std::string& dir, const LlamaConfig& c, const TensorMap& w, const std::string& dtype) {
  llama_weights_check(c, w, dir);
  std::filesystem::create_directories(dir);
  safetensors_write((std::filesystem::path(dir) / "model.safetensors").string(), w, dtype);
  file_write_atomic((std::filesystem::path(dir) / "config.json").string(), c.to_json().dump(2) + "\n");
}

}  // namespace triescope
