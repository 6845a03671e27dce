#include "core/model/torch/gguf_llama.h"

#include <map>
#include <set>
#include <tuple>

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace triescope {

using json = nlohmann::json;

namespace {
const std::string kArch = "llama";

std::string key(const char* k) { return kArch + "." + k; }

// llama.cpp's per-layer tensor names (blk.N.<gguf>) and their Hugging Face names.
const std::map<std::string, std::string>& layer_tensor_names() {
  static const std::map<std::string, std::string> m = {
      {"attn_norm.weight", "input_layernorm.weight"},     {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},       {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},           {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},           {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},            {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  return m;
}

// "blk.12.attn_q.weight" -> (12, "attn_q.weight"); nullopt for other names.
std::optional<std::pair<int64_t, std::string>> split_layer_name(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4 || dot > 12) return std::nullopt;
  int64_t layer = 0;
  for (size_t k = 4; k < dot; ++k) {
    if (name[k] < '0' || name[k] > '9') return std::nullopt;
    layer = layer * 10 + (name[k] - '0');
  }
  return std::pair<int64_t, std::string>{layer, name.substr(dot + 1)};
}
}  // namespace

LlamaConfig gguf_llama_config(const GgufFile& f) {
  const std::string& o = f.origin();
  const std::string arch = f.get_string("general.architecture");
  TS_CHECK(arch == kArch, o << ": metadata \"general.architecture\" is \"" << arch
                            << "\": only \"llama\" (Llama, SmolLM, Mistral-style dense models) is supported");
  LlamaConfig c;
  c.hidden_size = static_cast<int32_t>(f.get_int(key("embedding_length"), 1, 1 << 16));
  c.num_hidden_layers = static_cast<int32_t>(f.get_int(key("block_count"), 1, 1024));
  c.intermediate_size = static_cast<int32_t>(f.get_int(key("feed_forward_length"), 1, 1 << 18));
  c.max_position_embeddings = static_cast<int32_t>(f.get_int(key("context_length"), 1, 1 << 24));
  c.num_attention_heads = static_cast<int32_t>(f.get_int(key("attention.head_count"), 1, 1024));
  c.num_key_value_heads =
      static_cast<int32_t>(f.get_int_opt(key("attention.head_count_kv"), 1, 1024).value_or(c.num_attention_heads));
  TS_CHECK(c.num_attention_heads % c.num_key_value_heads == 0,
           o << ": metadata \"" << key("attention.head_count") << "\" (" << c.num_attention_heads << ") must be a multiple of \""
             << key("attention.head_count_kv") << "\" (" << c.num_key_value_heads << ")");
  const auto key_length = f.get_int_opt(key("attention.key_length"), 2, 4096);
  const auto value_length = f.get_int_opt(key("attention.value_length"), 2, 4096);
  if (key_length) {
    c.head_dim = static_cast<int32_t>(*key_length);
  } else {
    TS_CHECK(c.hidden_size % c.num_attention_heads == 0,
             o << ": metadata \"" << key("embedding_length") << "\" (" << c.hidden_size << ") must be a multiple of \""
               << key("attention.head_count") << "\" (" << c.num_attention_heads << ")");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  TS_CHECK(!value_length || *value_length == c.head_dim, o << ": metadata \"" << key("attention.value_length") << "\" ("
                                                           << *value_length << ") differs from the key length (" << c.head_dim
                                                           << "): not implemented");
  TS_CHECK(c.head_dim % 2 == 0, o << ": head dimension " << c.head_dim << " must be even for rotary embeddings");
  if (const auto rot = f.get_int_opt(key("rope.dimension_count"), 0, 4096))
    TS_CHECK(*rot == c.head_dim, o << ": metadata \"" << key("rope.dimension_count") << "\" = " << *rot
                                   << ": partial rotary embeddings are not implemented (head dimension " << c.head_dim << ")");
  c.rope_theta = f.get_float_opt(key("rope.freq_base")).value_or(10000.0);
  TS_CHECK(c.rope_theta >= 1.0 && c.rope_theta <= 1e12, o << ": metadata \"" << key("rope.freq_base") << "\" must be in [1, 1e12], got " << c.rope_theta);
  c.rms_norm_eps = f.get_float(key("attention.layer_norm_rms_epsilon"));
  TS_CHECK(c.rms_norm_eps >= 0.0 && c.rms_norm_eps <= 1.0,
           o << ": metadata \"" << key("attention.layer_norm_rms_epsilon") << "\" must be in [0, 1], got " << c.rms_norm_eps);
  const std::string scaling = f.get_string_opt(key("rope.scaling.type")).value_or("none");
  TS_CHECK(scaling == "none", o << ": metadata \"" << key("rope.scaling.type") << "\" is \"" << scaling
                                << "\": rope scaling is not implemented (plain RoPE only)");
  TS_CHECK(!f.find_tensor("rope_freqs.weight"), o << ": tensor \"rope_freqs.weight\" is present: Llama-3.1 style rope scaling is not implemented");
  TS_CHECK(f.get_int_opt(key("expert_count"), 0, INT32_MAX).value_or(0) == 0,
           o << ": metadata \"" << key("expert_count") << "\" is set: mixture-of-experts models are not implemented");
  if (const auto v = f.get_int_opt(key("vocab_size"), 2, 1 << 22)) {
    c.vocab_size = static_cast<int32_t>(*v);
  } else if (const GgufValue* t = f.find("tokenizer.ggml.tokens"); t && t->type == GgufValueType::array) {
    c.vocab_size = static_cast<int32_t>(t->count());
  } else {
    const GgufTensorInfo* e = f.find_tensor("token_embd.weight");
    TS_CHECK(e && e->ne.size() == 2, o << ": no \"" << key("vocab_size") << "\", no tokenizer.ggml.tokens and no 2-D token_embd.weight: cannot tell the vocabulary size");
    c.vocab_size = static_cast<int32_t>(e->ne[1]);
  }
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c.attention_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  if (const auto eos = f.get_int_opt("tokenizer.ggml.eos_token_id", 0, c.vocab_size - 1)) c.eos_token_id = static_cast<int32_t>(*eos);
  return c;
}

void gguf_unpermute_rope_rows(HostTensor& t, int32_t heads) {
  TS_CHECK(!t.shape.empty() && heads > 0 && t.shape[0] % (2 * heads) == 0,
           "gguf: cannot undo the rope permutation of a tensor with " << (t.shape.empty() ? 0 : t.shape[0]) << " rows over " << heads << " heads");
  const int64_t d = t.shape[0] / heads, half = d / 2, cols = t.numel() / t.shape[0];
  std::vector<float> out(t.data.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t s = 0; s < 2; ++s) {
        const float* src = t.data.data() + (h * d + 2 * j + s) * cols;
        std::copy(src, src + cols, out.data() + (h * d + s * half + j) * cols);
      }
  t.data.swap(out);
}

TensorMap gguf_llama_weights(const GgufFile& f, const LlamaConfig& c) {
  const std::string& o = f.origin();
  TensorMap w;
  for (const auto& info : f.tensors()) {
    std::string hf;
    int32_t permute_heads = 0;
    if (info.name == "token_embd.weight") hf = "model.embed_tokens.weight";
    else if (info.name == "output_norm.weight") hf = "model.norm.weight";
    else if (info.name == "output.weight") hf = "lm_head.weight";
    else if (const auto lt = split_layer_name(info.name)) {
      const auto it = layer_tensor_names().find(lt->second);
      TS_CHECK(it != layer_tensor_names().end(), o << ": tensor \"" << info.name << "\" is not a Llama tensor this reader knows");
      TS_CHECK(lt->first < c.num_hidden_layers, o << ": tensor \"" << info.name << "\": layer " << lt->first
                                                   << " is past \"" << key("block_count") << "\" = " << c.num_hidden_layers);
      hf = "model.layers." + std::to_string(lt->first) + "." + it->second;
      if (lt->second.rfind("attn_q.", 0) == 0) permute_heads = c.num_attention_heads;
      if (lt->second.rfind("attn_k.", 0) == 0) permute_heads = c.num_key_value_heads;
    } else {
      TS_FAIL(o << ": tensor \"" << info.name << "\" is not a Llama tensor this reader knows");
    }
    HostTensor t = f.tensor_f32(info);
    if (permute_heads > 0) {
      TS_CHECK(t.shape[0] == int64_t{permute_heads} * c.head_dim,
               o << ": tensor \"" << info.name << "\" has " << t.shape[0] << " rows, the heads imply " << int64_t{permute_heads} * c.head_dim);
      gguf_unpermute_rope_rows(t, permute_heads);
    }
    w.emplace(hf, std::move(t));
  }
  llama_weights_check(c, w, o);
  return w;
}

std::shared_ptr<const BpeTokenizer> gguf_tokenizer(const GgufFile& f) {
  const std::string& o = f.origin();
  if (!f.find("tokenizer.ggml.tokens")) return nullptr;
  const std::string model = f.get_string("tokenizer.ggml.model");
  TS_CHECK(model == "gpt2", o << ": metadata \"tokenizer.ggml.model\" is \"" << model
                              << "\": only byte-level BPE (\"gpt2\") is supported, not SentencePiece (\"llama\") or others");
  const std::string pre = f.get_string("tokenizer.ggml.pre");
  static const std::set<std::string> digits_first = {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone"};
  static const std::set<std::string> gpt2 = {"gpt2", "mpt", "olmo", "jais"};
  static const std::set<std::string> llama3 = {"llama-bpe", "llama3", "llama-v3"};
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  json pre_tokenizer;
  bool ignore_merges = false;
  if (digits_first.count(pre)) {
    pre_tokenizer = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level}}};
  } else if (gpt2.count(pre)) {
    pre_tokenizer = byte_level;
  } else if (llama3.count(pre)) {
    json bl = byte_level;
    bl["use_regex"] = false;
    pre_tokenizer = {{"type", "Sequence"},
                     {"pretokenizers",
                      {{{"type", "Split"},
                        {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                        {"behavior", "Isolated"},
                        {"invert", false}},
                       bl}}};
    ignore_merges = true;
  } else {
    TS_FAIL(o << ": metadata \"tokenizer.ggml.pre\" is \"" << pre
              << "\": this pre-tokenizer is not supported (smollm, starcoder, refact, command-r, codeshell, exaone, gpt2, mpt, olmo, jais, llama-bpe)");
  }
  const std::vector<std::string> tokens = f.get_strings("tokenizer.ggml.tokens");
  const std::vector<std::string> merges = f.get_strings("tokenizer.ggml.merges");
  std::vector<int64_t> types;
  if (f.find("tokenizer.ggml.token_type")) {
    types = f.get_ints("tokenizer.ggml.token_type");
    TS_CHECK(types.size() == tokens.size(), o << ": metadata \"tokenizer.ggml.token_type\" has " << types.size()
                                              << " entries, \"tokenizer.ggml.tokens\" " << tokens.size());
  }
  for (const char* k : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
    f.get_int_opt(k, 0, static_cast<int64_t>(tokens.size()) - 1);  // range check only
  json vocab = json::object(), added = json::array(), merge_list = json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    // One id per string, as tokenizer.json's vocab (a map) has it: with two,
    // the first id could never be encoded and its bytes would vanish silently.
    const auto dup = vocab.find(tokens[id]);
    TS_CHECK(dup == vocab.end(), o << ": metadata \"tokenizer.ggml.tokens\" lists " << json_brief(json(tokens[id])) << " twice, as ids "
                                   << dup->get<size_t>() << " and " << id);
    vocab[tokens[id]] = id;
    // llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    if (!types.empty() && (types[id] == 3 || types[id] == 4) && !tokens[id].empty())
      added.push_back({{"id", id}, {"content", tokens[id]}, {"special", types[id] == 3}});
  }
  for (size_t k = 0; k < merges.size(); ++k) {
    TS_CHECK(merges[k].find(' ', 1) != std::string::npos,
             o << ": metadata \"tokenizer.ggml.merges\"[" << k << "] = \"" << merges[k] << "\" must be \"a b\"");
    merge_list.push_back(merges[k]);
  }
  json bpe = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}, {"ignore_merges", ignore_merges}};
  // A byte with no token of its own (SmolLM2 has none for 0x04, 0xc0, 0xf5..0xff)
  // becomes the unknown token, as transformers' GGUF tokenizer does.
  if (const auto unk = f.get_int_opt("tokenizer.ggml.unknown_token_id", 0, static_cast<int64_t>(tokens.size()) - 1))
    bpe["unk_token"] = tokens[static_cast<size_t>(*unk)];
  json j = {{"model", bpe},
            {"added_tokens", added},
            {"pre_tokenizer", pre_tokenizer},
            {"decoder", {{"type", "ByteLevel"}}}};
  // tokenizer.ggml.add_bos_token / add_eos_token (absent: false) as the
  // template encode(text, add_special_tokens = true) applies.
  json single = json::array(), specials = json::object();
  for (const auto& [flag, id_key, name, first] :
       {std::tuple{"tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id", "bos", true},
        std::tuple{"tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id", "eos", false}}) {
    if (!f.get_bool_opt(flag).value_or(false)) continue;
    const auto id = f.get_int_opt(id_key, 0, static_cast<int64_t>(tokens.size()) - 1);
    TS_CHECK(id, o << ": metadata \"" << flag << "\" is true but \"" << id_key << "\" is missing");
    const json item = json::object({{"SpecialToken", {{"id", name}, {"type_id", 0}}}});
    if (first) single.insert(single.begin(), item);
    else single.push_back(item);
    specials[name] = {{"id", name}, {"ids", {*id}}, {"tokens", {tokens[static_cast<size_t>(*id)]}}};
  }
  if (!specials.empty()) {
    const json sequence = json::object({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    single.insert(single.begin() + (specials.contains("bos") ? 1 : 0), sequence);
    j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
  }
  return std::make_shared<BpeTokenizer>(BpeTokenizer::parse(j, o + " (tokenizer.ggml.*)"));
}

GgufLlama gguf_llama_load(const std::string& path) {
  const GgufFile f = GgufFile::read(path);
  GgufLlama m;
  m.config = gguf_llama_config(f);
  m.weights = gguf_llama_weights(f, m.config);
  m.tokenizer = gguf_tokenizer(f);
  return m;
}

}  // namespace triescope
