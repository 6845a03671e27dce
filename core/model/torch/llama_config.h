// A Llama-family decoder's hyper-parameters, read from a Hugging Face
// config.json, and the tensors such a checkpoint must hold (HF names).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/torch/safetensors.h"

namespace triescope {

struct LlamaConfig {
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;
  int32_t num_hidden_layers = 0;
  int32_t num_attention_heads = 0;
  int32_t num_key_value_heads = 0;  // GQA: each KV head serves heads / kv_heads query heads
  int32_t head_dim = 0;             // hidden_size / num_attention_heads unless given
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int32_t max_position_embeddings = 2048;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (Qwen2)
  int32_t eos_token_id = -1;    // the first one when config.json lists several
  nlohmann::json to_json() const;
};

// Reads the Llama keys of a config.json object (other keys are ignored: HF
// configs carry many). Rejects what this implementation does not compute
// (hidden_act other than silu, rope_scaling, sliding windows) with an Error
// naming `origin` and the key.
LlamaConfig llama_config_parse(const nlohmann::json& j, const std::string& origin);
LlamaConfig llama_config_load(const std::string& path);

// Every tensor a checkpoint for `c` must hold, with its shape (HF Llama names;
// lm_head.weight only when the head is untied).
std::vector<std::pair<std::string, std::vector<int64_t>>> llama_tensor_shapes(const LlamaConfig& c);

// Checks presence and shape of every expected tensor; names file and tensor.
void llama_weights_check(const LlamaConfig& c, const TensorMap& w, const std::string& origin);

// Seeded random weights: N(0, init_std) matrices, unit RMSNorm weights.
// Deterministic across platforms (splitmix64 + Box-Muller, no std distributions).
TensorMap llama_random_weights(const LlamaConfig& c, uint64_t seed, double init_std = 0.02);

// Writes config.json and model.safetensors into `dir` (created if missing).
void llama_checkpoint_write(const std::string& dir, const LlamaConfig& c, const TensorMap& w,
                            const std::string& dtype = "F32");

}  // namespace triescope
