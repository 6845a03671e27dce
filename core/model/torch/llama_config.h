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
  bool attention_bias = false;  // q/k/v biases (Qwen2; Llama's attention_bias)
  bool o_proj_bias = false;     // an o_proj bias too (Llama's attention_bias; Qwen2 has none)
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
// Number of weights those tensors hold.
int64_t llama_param_count(const LlamaConfig& c);

// Checks presence and shape of every expected tensor; names file and tensor.
void llama_weights_check(const LlamaConfig& c, const TensorMap& w, const std::string& origin);

// Seeded random weights: N(0, init_std) matrices, unit RMSNorm weights.
// Deterministic across platforms (splitmix64 + Box-Muller, no std distributions).
TensorMap llama_random_weights(const LlamaConfig& c, uint64_t seed, double init_std = 0.02);

// Draft models derived from a target (DSBD's transformer pair, docs/dsbd.md).
// Keeps decoder layers [0, keep) and drops the rest; embedding, final norm and
// head are kept as they are (an early-exit draft). Errors name `origin`.
void llama_keep_layers(LlamaConfig& c, TensorMap& w, int32_t keep, const std::string& origin);
// Every tensor t becomes t + N(0, (rel_std * std(t))^2) elementwise, std(t)
// the population standard deviation of t's own entries (so a constant tensor,
// e.g. a unit RMSNorm weight of random_init, is left unchanged). The noise of
// a tensor depends only on (seed, tensor name): splitmix64 + Box-Muller, the
// same on every platform, and independent of which other tensors exist (so
// keep_layers and perturbation commute). rel_std = 0 leaves every weight as is.
void llama_weights_perturb(TensorMap& w, double rel_std, uint64_t seed);

// Writes config.json and model.safetensors into `dir` (created if missing).
void llama_checkpoint_write(const std::string& dir, const LlamaConfig& c, const TensorMap& w,
                            const std::string& dtype = "F32");

}  // namespace triescope
