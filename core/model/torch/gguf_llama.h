// A Llama-architecture model in a GGUF file (general.architecture "llama"),
// mapped onto what the safetensors path produces: a LlamaConfig from the
// llama.* keys, fp32 weights under Hugging Face names, and the byte-level BPE
// tokenizer from tokenizer.ggml.*.
#pragma once
#include <memory>
#include <string>

#include "core/model/torch/bpe_tokenizer.h"
#include "core/model/torch/gguf.h"
#include "core/model/torch/llama_config.h"

namespace triescope {

// llama.context_length, embedding_length, block_count, feed_forward_length,
// attention.head_count(_kv), attention.key_length / value_length,
// rope.dimension_count, rope.freq_base, attention.layer_norm_rms_epsilon,
// vocab_size (else the token count); tied when the file has no output.weight
// (llama.cpp then reads the head from token_embd); eos from
// tokenizer.ggml.eos_token_id. Refused with a named error: other
// architectures, rope scaling, partial rotary, experts, per-layer head counts.
LlamaConfig gguf_llama_config(const GgufFile& f);

// Every tensor dequantised to fp32 under its Hugging Face name, with
// attn_q / attn_k rows (and biases) put back in Hugging Face order: llama.cpp's
// converter permutes them per head from rotate-half pairs (i, i + d/2) to
// adjacent pairs (2i, 2i + 1) for its rope kernel. Unknown tensors, missing
// ones and wrong shapes are errors naming the file and the tensor.
TensorMap gguf_llama_weights(const GgufFile& f, const LlamaConfig& c);

// Undoes the converter's permutation of a [heads * head_dim, ...] tensor:
// GGUF row h*d + 2j + t holds Hugging Face row h*d + t*d/2 + j.
void gguf_unpermute_rope_rows(HostTensor& t, int32_t heads);

// The tokenizer a GGUF file carries: tokenizer.ggml.model "gpt2" (byte-level
// BPE), tokens, merges, token_type (3 control and 4 user-defined tokens are
// matched verbatim, like tokenizer.json's added tokens), and
// tokenizer.ggml.pre chosen as llama.cpp does (smollm, starcoder, refact,
// command-r, codeshell, exaone: digits split one by one before the GPT-2
// split; gpt2, mpt, olmo, jais, default: the GPT-2 split; llama-bpe,
// llama3: the Llama-3 Split with ignore_merges). Built through
// BpeTokenizer::parse from the equivalent tokenizer.json object. nullptr when
// the file has no tokenizer.ggml.tokens.
std::shared_ptr<const BpeTokenizer> gguf_tokenizer(const GgufFile& f);

// A whole Llama GGUF file: what the three functions above read from it.
struct GgufLlama {
  LlamaConfig config;
  TensorMap weights;
  std::shared_ptr<const BpeTokenizer> tokenizer;  // nullptr when the file has none
};
GgufLlama gguf_llama_load(const std::string& path);

}  // namespace triescope
