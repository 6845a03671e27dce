// GGUF: files written here byte by byte (a writer independent of the reader)
// read back every metadata type, dequantise each tensor type to the values
// ggml's block layouts define, load as a Llama with the logits of the same
// weights (attn_q / attn_k permuted the way llama.cpp's converter does), and
// every malformed file gets its exact named error.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <filesystem>
#include <functional>

#include "core/common/file_io.h"
#include "core/common/hash.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/torch/gguf_llama.h"
#include "tests/common/fresh_test_dir.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;
namespace fs = std::filesystem;

namespace {

// A GGUF writer for tests: little-endian fields appended as the format lays them out.
struct GgufBuilder {
  uint32_t version = 3;
  uint64_t alignment = 32;
  std::string kv, infos, data;
  uint64_t n_kv = 0, n_tensors = 0;

  static void put(std::string& out, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  }
  static void str(std::string& out, const std::string& s) {
    put(out, s.size(), 8);
    out += s;
  }
  // A key with its type and the value's bytes as given.
  GgufBuilder& raw(const std::string& key, uint32_t type, const std::string& value) {
    str(kv, key);
    put(kv, type, 4);
    kv += value;
    ++n_kv;
    return *this;
  }
  GgufBuilder& u32(const std::string& key, uint32_t v) { return raw(key, 4, le(v, 4)); }
  GgufBuilder& f32(const std::string& key, float v) { return raw(key, 6, le(std::bit_cast<uint32_t>(v), 4)); }
  GgufBuilder& string(const std::string& key, const std::string& v) {
    std::string b;
    str(b, v);
    return raw(key, 8, b);
  }
  GgufBuilder& strings(const std::string& key, const std::vector<std::string>& v) {
    std::string b = le(8, 4) + le(v.size(), 8);
    for (const auto& s : v) str(b, s);
    return raw(key, 9, b);
  }
  GgufBuilder& i32s(const std::string& key, const std::vector<int32_t>& v) {
    std::string b = le(5, 4) + le(v.size(), 8);
    for (int32_t x : v) put(b, static_cast<uint32_t>(x), 4);
    return raw(key, 9, b);
  }
  // A tensor with its bytes as given; data padded to the alignment before it.
  GgufBuilder& tensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type, const std::string& bytes) {
    data.append((alignment - data.size() % alignment) % alignment, '\0');
    str(infos, name);
    put(infos, ne.size(), 4);
    for (uint64_t d : ne) put(infos, d, 8);
    put(infos, type, 4);
    put(infos, data.size(), 8);
    data += bytes;
    ++n_tensors;
    return *this;
  }
  GgufBuilder& tensor_f32(const std::string& name, const std::vector<uint64_t>& ne, const std::vector<float>& v) {
    std::string b;
    for (float x : v) put(b, std::bit_cast<uint32_t>(x), 4);
    return tensor(name, ne, 0, b);
  }
  static std::string le(uint64_t v, int bytes) {
    std::string s;
    put(s, v, bytes);
    return s;
  }
  std::string bytes() const {
    std::string out = "GGUF" + le(version, 4) + le(n_tensors, 8) + le(n_kv, 8) + kv + infos;
    out.append((alignment - out.size() % alignment) % alignment, '\0');
    return out + data;
  }
};

const std::string kOrigin = "test.gguf";

GgufFile parse(const std::string& bytes) { return GgufFile::parse(bytes, kOrigin); }

// llama.cpp convert_hf_to_gguf.py's LlamaModel.permute, written from its numpy:
// w.reshape(heads, 2, rows / heads / 2, cols).swapaxes(1, 2).reshape(w.shape).
HostTensor llama_cpp_permute(const HostTensor& w, int32_t heads) {
  const int64_t rows = w.shape[0], cols = w.numel() / rows, half = rows / heads / 2;
  HostTensor out = w;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t j = 0; j < half; ++j)  // source index [h, s, j] lands at [h, j, s]
        std::copy_n(w.data.data() + ((h * 2 + s) * half + j) * cols, cols, out.data.data() + ((h * half + j) * 2 + s) * cols);
  return out;
}

// A tiny Llama written as llama.cpp would: llama.* keys, GGUF tensor names, ne = shape reversed.
std::string llama_gguf(const LlamaConfig& c, const TensorMap& w, bool permute, uint32_t type = 0,
                       const std::function<void(GgufBuilder&)>& extra = {}) {
  GgufBuilder b;
  if (extra) extra(b);
  b.string("general.architecture", "llama")
      .u32("llama.context_length", static_cast<uint32_t>(c.max_position_embeddings))
      .u32("llama.embedding_length", static_cast<uint32_t>(c.hidden_size))
      .u32("llama.block_count", static_cast<uint32_t>(c.num_hidden_layers))
      .u32("llama.feed_forward_length", static_cast<uint32_t>(c.intermediate_size))
      .u32("llama.attention.head_count", static_cast<uint32_t>(c.num_attention_heads))
      .u32("llama.attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads))
      .u32("llama.rope.dimension_count", static_cast<uint32_t>(c.head_dim))
      .f32("llama.rope.freq_base", static_cast<float>(c.rope_theta))
      .f32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps))
      .u32("llama.vocab_size", static_cast<uint32_t>(c.vocab_size));
  auto put = [&](const std::string& gguf_name, const std::string& hf, int32_t heads) {
    HostTensor t = w.at(hf);
    if (permute && heads > 0) t = llama_cpp_permute(t, heads);
    const std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());
    if (type == 1) {  // F16
      std::string bytes;
      for (float v : t.data) GgufBuilder::put(bytes, float_to_half(v), 2);
      b.tensor(gguf_name, ne, 1, bytes);
    } else {
      b.tensor_f32(gguf_name, ne, t.data);
    }
  };
  put("token_embd.weight", "model.embed_tokens.weight", 0);
  for (int32_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string g = "blk." + std::to_string(l) + ".", h = "model.layers." + std::to_string(l) + ".";
    put(g + "attn_norm.weight", h + "input_layernorm.weight", 0);
    put(g + "attn_q.weight", h + "self_attn.q_proj.weight", c.num_attention_heads);
    put(g + "attn_k.weight", h + "self_attn.k_proj.weight", c.num_key_value_heads);
    put(g + "attn_v.weight", h + "self_attn.v_proj.weight", 0);
    if (c.attention_bias) {
      put(g + "attn_q.bias", h + "self_attn.q_proj.bias", c.num_attention_heads);
      put(g + "attn_k.bias", h + "self_attn.k_proj.bias", c.num_key_value_heads);
      put(g + "attn_v.bias", h + "self_attn.v_proj.bias", 0);
    }
    put(g + "attn_output.weight", h + "self_attn.o_proj.weight", 0);
    put(g + "ffn_norm.weight", h + "post_attention_layernorm.weight", 0);
    put(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", 0);
    put(g + "ffn_up.weight", h + "mlp.up_proj.weight", 0);
    put(g + "ffn_down.weight", h + "mlp.down_proj.weight", 0);
  }
  put("output_norm.weight", "model.norm.weight", 0);
  if (!c.tie_word_embeddings) put("output.weight", "lm_head.weight", 0);
  return b.bytes();
}

// A valid file with one key and one tensor, for the bad-input cases to break.
GgufBuilder small_file() {
  GgufBuilder b;
  b.u32("a.key", 7).tensor_f32("t", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  return b;
}

}  // namespace

TEST_CASE("GGUF metadata of every value type reads back", "[model][gguf]") {
  const uint32_t version = GENERATE(2u, 3u);
  CAPTURE(version);
  GgufBuilder b;
  b.version = version;
  b.alignment = 64;
  b.raw("u8", 0, "\xc8").raw("i8", 1, "\xfb").raw("u16", 2, GgufBuilder::le(60000, 2));
  b.raw("i16", 3, GgufBuilder::le(static_cast<uint16_t>(-300), 2)).raw("u32", 4, GgufBuilder::le(4000000000u, 4));
  b.raw("i32", 5, GgufBuilder::le(static_cast<uint32_t>(-2000000000), 4)).f32("f32", 1.5f).raw("bool", 7, "\x01");
  b.string("str", "h\xc3\xa9llo").raw("u64", 10, GgufBuilder::le((uint64_t{1} << 63) + 5, 8));
  b.raw("i64", 11, GgufBuilder::le(static_cast<uint64_t>(-(int64_t{1} << 40)), 8));
  b.raw("f64", 12, GgufBuilder::le(std::bit_cast<uint64_t>(0.1), 8));
  b.i32s("ints", {1, -2, 3}).strings("strs", {"a", "bc", ""}).i32s("empty", {});
  // [[1, 2], [3]]: an array of arrays of uint8
  b.raw("nested", 9, GgufBuilder::le(9, 4) + GgufBuilder::le(2, 8) + GgufBuilder::le(0, 4) + GgufBuilder::le(2, 8) + "\x01\x02" +
                         GgufBuilder::le(0, 4) + GgufBuilder::le(1, 8) + "\x03");
  b.raw("general.alignment", 4, GgufBuilder::le(64, 4));
  b.tensor_f32("w", {3}, {1.0f, 2.0f, 3.0f});
  const GgufFile f = parse(b.bytes());
  CHECK(f.version() == version);
  CHECK(f.alignment() == 64);
  CHECK(f.data_offset() % 64 == 0);
  CHECK(f.metadata().size() == 17);
  CHECK(f.metadata()[0].first == "u8");
  CHECK(f.find("u8")->u == 200);
  CHECK(f.find("i8")->i == -5);
  CHECK(f.find("u16")->u == 60000);
  CHECK(f.find("i16")->i == -300);
  CHECK(f.find("u32")->u == 4000000000u);
  CHECK(f.find("i32")->i == -2000000000);
  CHECK(f.get_float("f32") == 1.5);
  CHECK(f.find("bool")->type == GgufValueType::boolean);
  CHECK(f.get_bool_opt("bool") == true);
  CHECK(f.get_string("str") == "h\xc3\xa9llo");
  CHECK(f.find("u64")->u == (uint64_t{1} << 63) + 5);
  CHECK(f.get_int("i64", INT64_MIN, INT64_MAX) == -(int64_t{1} << 40));
  CHECK(f.get_float("f64") == 0.1);
  CHECK(f.get_ints("ints") == std::vector<int64_t>{1, -2, 3});
  CHECK(f.get_strings("strs") == std::vector<std::string>{"a", "bc", ""});
  CHECK(f.get_ints("empty").empty());
  const GgufValue& n = *f.find("nested");
  REQUIRE(n.count() == 2);
  CHECK(n.elem == GgufValueType::array);
  CHECK(n.arrays[0].uints == std::vector<uint64_t>{1, 2});
  CHECK(n.arrays[1].uints == std::vector<uint64_t>{3});
  CHECK(n.element(1).element(0).u == 3);
  CHECK(f.find("ints")->ints == std::vector<int64_t>{1, -2, 3});
  CHECK(f.find("missing") == nullptr);
  REQUIRE(f.tensors().size() == 1);
  CHECK(f.tensor_f32(f.tensors()[0]).data == std::vector<float>{1.0f, 2.0f, 3.0f});
  // typed reads name the key and what it is
  CHECK_THROWS_WITH(f.get_string("u8"), "test.gguf: metadata \"u8\" must be a string, got uint8");
  CHECK_THROWS_WITH(f.get_int("str", 0, 10), "test.gguf: metadata \"str\" must be an integer, got string");
  CHECK_THROWS_WITH(f.get_int("u32", 0, 10), "test.gguf: metadata \"u32\" must be in [0, 10], got 4000000000");
  CHECK_THROWS_WITH(f.get_strings("ints"), "test.gguf: metadata \"ints\" must be an array of string, got an array of int32");
  CHECK_THROWS_WITH(f.get_int("missing", 0, 1), "test.gguf: metadata \"missing\" is missing");
}

TEST_CASE("GGUF tensors dequantise as ggml's block layouts define", "[model][gguf]") {
  using B = GgufBuilder;
  // Q8_0: {fp16 d, int8 q[32]}; two blocks with d = 0.5 and d = -2.
  std::string q8;
  for (uint16_t d : {uint16_t{0x3800}, uint16_t{0xc000}}) {
    B::put(q8, d, 2);
    for (int j = 0; j < 32; ++j) q8.push_back(static_cast<char>(j - 16));
  }
  // Q4_0: {fp16 d, uint8 q[16]}: value j < 16 is the low nibble of q[j], value 16 + j its high nibble; x = d (nibble - 8).
  std::string q40;
  B::put(q40, 0x4000, 2);  // d = 2
  for (int j = 0; j < 16; ++j) q40.push_back(static_cast<char>(j | (15 - j) << 4));
  // Q4_1: {fp16 d, fp16 m, uint8 q[16]}; x = d nibble + m, d = 0.25, m = -1.
  std::string q41;
  B::put(q41, 0x3400, 2);
  B::put(q41, 0xbc00, 2);
  for (int j = 0; j < 16; ++j) q41.push_back(static_cast<char>(j | (15 - j) << 4));
  std::string f16, bf16, f32;
  for (uint16_t h : {0x3c00, 0xc000, 0x0001, 0x7c00}) B::put(f16, h, 2);  // 1, -2, 2^-24, inf
  for (uint16_t h : {0x3f80, 0xc0a0}) B::put(bf16, h, 2);                 // 1, -5
  for (float v : {1.5f, -0.0f, -INFINITY}) B::put(f32, std::bit_cast<uint32_t>(v), 4);
  GgufBuilder b;
  b.tensor("q8", {64}, 8, q8).tensor("q40", {32}, 2, q40).tensor("q41", {32}, 3, q41);
  b.tensor("f16", {2, 2}, 1, f16).tensor("bf16", {2}, 30, bf16).tensor("f32", {3}, 0, f32);
  const GgufFile f = parse(b.bytes());
  auto values = [&](const char* name) { return f.tensor_f32(*f.find_tensor(name)).data; };
  std::vector<float> e8, e40, e41;
  for (int j = 0; j < 32; ++j) e8.push_back(0.5f * static_cast<float>(j - 16));
  for (int j = 0; j < 32; ++j) e8.push_back(-2.0f * static_cast<float>(j - 16));
  for (int j = 0; j < 16; ++j) e40.push_back(2.0f * static_cast<float>(j - 8));
  for (int j = 0; j < 16; ++j) e40.push_back(2.0f * static_cast<float>(15 - j - 8));
  for (int j = 0; j < 16; ++j) e41.push_back(0.25f * static_cast<float>(j) - 1.0f);
  for (int j = 0; j < 16; ++j) e41.push_back(0.25f * static_cast<float>(15 - j) - 1.0f);
  CHECK(values("q8") == e8);
  CHECK(values("q40") == e40);
  CHECK(values("q41") == e41);
  CHECK(values("f16") == std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), INFINITY});
  CHECK(f.tensor_f32(*f.find_tensor("f16")).shape == std::vector<int64_t>{2, 2});
  CHECK(values("bf16") == std::vector<float>{1.0f, -5.0f});
  const auto v32 = values("f32");
  CHECK(v32[0] == 1.5f);
  CHECK(std::signbit(v32[1]));
  CHECK(v32[2] == -INFINITY);
  CHECK(f.find_tensor("q41")->nbytes == 20);
  CHECK(f.find_tensor("q8")->nbytes == 68);
}

TEST_CASE("GGUF Q5_0, Q5_1 and K-quant super-blocks dequantise as ggml defines them", "[model][gguf]") {
  using B = GgufBuilder;
  // Q5_0 / Q5_1: nibbles as in Q4_0, fifth bits in a uint32 qh: bit j belongs to value j.
  const uint32_t qh5 = 0xa5c3f00fu;
  std::string q50, q51;
  B::put(q50, 0x3800, 2);  // d = 0.5
  B::put(q51, 0x3800, 2);
  B::put(q51, 0xc000, 2);  // m = -2
  B::put(q50, qh5, 4);
  B::put(q51, qh5, 4);
  for (int j = 0; j < 16; ++j) {
    q50.push_back(static_cast<char>(j | (15 - j) << 4));
    q51.push_back(static_cast<char>(j | (15 - j) << 4));
  }
  std::vector<float> e50, e51;
  for (int j = 0; j < 32; ++j) {
    const int q = (j < 16 ? j : 15 - (j - 16)) + 16 * static_cast<int>((qh5 >> j) & 1);
    e50.push_back(0.5f * static_cast<float>(q - 16));
    e51.push_back(0.5f * static_cast<float>(q) - 2.0f);
  }
  // Q4_K: d = 1, dmin = 0.5; sub-block scales s + 1 and mins 2, except that the
  // top bits of bytes 0 and 4 make scale 4 = 5 + 32 and min 4 = 2 + 16.
  std::string q4k;
  B::put(q4k, 0x3c00, 2);
  B::put(q4k, 0x3800, 2);
  uint8_t scales[12];
  for (int s = 0; s < 4; ++s) {
    scales[s] = static_cast<uint8_t>(s + 1);
    scales[s + 4] = 2;
    scales[s + 8] = static_cast<uint8_t>((s + 5) | 2 << 4);
  }
  scales[0] |= 0x80;
  scales[4] |= 0x40;
  q4k.append(reinterpret_cast<const char*>(scales), 12);
  for (int k = 0; k < 128; ++k) q4k.push_back(static_cast<char>((k % 16) | (15 - k % 16) << 4));
  std::vector<float> e4k;
  for (int s = 0; s < 8; ++s)
    for (int i = 0; i < 32; ++i) {
      const int q = s % 2 == 0 ? i % 16 : 15 - i % 16;
      const float sc = s == 4 ? 37.0f : static_cast<float>(s + 1), m = s == 4 ? 18.0f : 2.0f;
      e4k.push_back(sc * static_cast<float>(q) - 0.5f * m);
    }
  // Q6_K, expected values by ggml's reference loop (dequantize_row_q6_K), d = 0.25.
  std::string q6k;
  uint8_t ql[128], qh[64];
  int8_t sc[16];
  for (int k = 0; k < 128; ++k) ql[k] = static_cast<uint8_t>(k * 7 + 3);
  for (int k = 0; k < 64; ++k) qh[k] = static_cast<uint8_t>(k * 37 + 11);
  for (int k = 0; k < 16; ++k) sc[k] = static_cast<int8_t>(k - 8);
  q6k.append(reinterpret_cast<const char*>(ql), 128).append(reinterpret_cast<const char*>(qh), 64).append(reinterpret_cast<const char*>(sc), 16);
  B::put(q6k, 0x3400, 2);
  std::vector<float> e6k(256);
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* L = ql + 64 * n;
      const uint8_t* H = qh + 32 * n;
      const int8_t* S = sc + 8 * n;
      const int is = l / 16;
      const int q1 = ((L[l] & 0xf) | ((H[l] >> 0) & 3) << 4) - 32, q2 = ((L[l + 32] & 0xf) | ((H[l] >> 2) & 3) << 4) - 32;
      const int q3 = ((L[l] >> 4) | ((H[l] >> 4) & 3) << 4) - 32, q4 = ((L[l + 32] >> 4) | ((H[l] >> 6) & 3) << 4) - 32;
      float* y = e6k.data() + 128 * n;
      y[l] = 0.25f * static_cast<float>(S[is]) * static_cast<float>(q1);
      y[l + 32] = 0.25f * static_cast<float>(S[is + 2]) * static_cast<float>(q2);
      y[l + 64] = 0.25f * static_cast<float>(S[is + 4]) * static_cast<float>(q3);
      y[l + 96] = 0.25f * static_cast<float>(S[is + 6]) * static_cast<float>(q4);
    }
  GgufBuilder b;
  b.tensor("q50", {32}, 6, q50).tensor("q51", {32}, 7, q51).tensor("q4k", {256}, 12, q4k).tensor("q6k", {256}, 14, q6k);
  const GgufFile f = parse(b.bytes());
  auto values = [&](const char* name) { return f.tensor_f32(*f.find_tensor(name)).data; };
  CHECK(values("q50") == e50);
  CHECK(values("q51") == e51);
  CHECK(values("q4k") == e4k);
  CHECK(values("q6k") == e6k);
  CHECK(f.find_tensor("q4k")->nbytes == 144);
  CHECK(f.find_tensor("q6k")->nbytes == 210);
  CHECK_THROWS_WITH(parse(GgufBuilder().tensor("k", {128}, 12, std::string(72, '\0')).bytes()),
                    "test.gguf: tensor \"k\": ne[0] = 128 is not a multiple of Q4_K's block of 256 values");
}

TEST_CASE("a Llama in GGUF loads with the logits of its weights", "[model][gguf]") {
  const bool tied = GENERATE(false, true);
  const bool bias = GENERATE(false, true);
  const uint32_t type = GENERATE(0u, 1u);  // F32, F16
  CAPTURE(tied, bias, type);
  LlamaConfig c = tiny_config(4, 2, 80, tied);
  c.attention_bias = bias;
  c.rms_norm_eps = std::ldexp(1.0, -17);  // stored as a float32 in GGUF: exact
  TensorMap w = llama_random_weights(c, 33, 0.2);
  if (type == 1)
    for (auto& [name, t] : w)
      for (auto& v : t.data) v = half_to_float(float_to_half(v));
  const fs::path dir = fresh_test_dir("gguf/llama");
  const std::string path = (dir / "tiny.gguf").string();
  file_write_atomic(path, llama_gguf(c, w, true, type));
  auto loaded = TorchTransformer::load_gguf(path);
  CHECK(loaded->config().to_json() == c.to_json());
  TorchTransformer ref(c, w, {});
  const std::vector<int32_t> tokens = {1, 7, 3, 60, 12, 5, 44};
  const Logits a = run_causal(*loaded, tokens), r = run_causal(ref, tokens);
  CHECK(max_abs_diff(a.data.data(), r.data.data(), static_cast<int32_t>(a.data.size())) == 0.0f);
  // Without llama.cpp's permutation the rotary pairs are wrong and the logits move: the test can fail.
  file_write_atomic(path, llama_gguf(c, w, false, type));
  auto unpermuted = TorchTransformer::load_gguf(path);
  const Logits u = run_causal(*unpermuted, tokens);
  CHECK(max_abs_diff(u.data.data(), r.data.data(), static_cast<int32_t>(u.data.size())) > 1e-3f);
}

TEST_CASE("a sample names a .gguf file; trie == batch beam search on it", "[model][gguf]") {
  torch_models_register();
  const LlamaConfig c = tiny_config(4, 2, 80, true);
  const fs::path dir = fresh_test_dir("gguf/sample");
  file_write_atomic((dir / "tiny.gguf").string(), llama_gguf(c, llama_random_weights(c, 9, 0.2), true));
  const json j = {{"schema", "triescope.sample"}, {"version", 1}, {"name", "gguf"}, {"algorithm", "trie_beam_search"},
                  {"model", {{"type", "transformer"}, {"path", "tiny.gguf"}, {"keep_layers", 1}}},
                  {"prompt", {1, 2, 3}},
                  {"beam", {{"num_beams", 3}, {"max_new_tokens", 6}}}};
  const Sample s = sample_parse(j, (dir / "s.json").string());
  CHECK(s.model->describe()["source"]["format"] == "gguf");
  CHECK(s.model->describe()["config"]["num_hidden_layers"] == 1);
  BeamConfig cfg;
  cfg.num_beams = 3;
  cfg.max_new_tokens = 6;
  const DecodeResult trie = trie_beam_search(*s.model, s.prompt, cfg);
  const DecodeResult batch = batch_beam_search(*s.model, s.prompt, cfg);
  REQUIRE(trie.hypotheses.size() == 3);
  REQUIRE(batch.hypotheses.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(trie.hypotheses[i].tokens == batch.hypotheses[i].tokens);
    CHECK(std::fabs(trie.hypotheses[i].score - batch.hypotheses[i].score) < 1e-4);
  }
}

TEST_CASE("the GGUF tokenizer equals the tokenizer.json it was made from", "[model][gguf]") {
  const bool digits = GENERATE(false, true);
  CAPTURE(digits);
  const json tj = small_tokenizer(digits);
  const BpeTokenizer ref = BpeTokenizer::parse(tj, "tokenizer.json");
  std::vector<std::string> tokens(302);
  std::vector<int32_t> types(302, 1);
  for (auto& [tok, id] : tj["model"]["vocab"].items()) tokens[id.get<size_t>()] = tok;
  for (size_t id = 0; id < tokens.size(); ++id)
    if (tokens[id].empty()) {
      tokens[id] = "[PAD" + std::to_string(id) + "]";
      types[id] = 5;  // unused
    }
  for (const auto& a : tj["added_tokens"]) {
    tokens[a["id"].get<size_t>()] = a["content"].get<std::string>();
    types[a["id"].get<size_t>()] = 3;  // control
  }
  GgufBuilder b;
  b.string("tokenizer.ggml.model", "gpt2").string("tokenizer.ggml.pre", digits ? "smollm" : "gpt2");
  b.strings("tokenizer.ggml.tokens", tokens).i32s("tokenizer.ggml.token_type", types);
  b.strings("tokenizer.ggml.merges", tj["model"]["merges"].get<std::vector<std::string>>());
  b.u32("tokenizer.ggml.eos_token_id", 300);
  const auto tok = gguf_tokenizer(parse(b.bytes()));
  REQUIRE(tok);
  CHECK(tok->pretokenizer() == ref.pretokenizer());
  CHECK(tok->vocab_size() == 302);
  for (const std::string text : {"the world", "<|im_start|>the 12 world<|endoftext|>", "caf\xc3\xa9  12345\n\n x"}) {
    CAPTURE(text);
    CHECK(tok->encode(text) == ref.encode(text));
    CHECK(tok->encode(text, /*add_special_tokens=*/true) == ref.encode(text));  // add_bos_token absent: false
    CHECK(tok->decode(tok->encode(text)) == text);
  }
  // add_bos_token / add_eos_token: the template that encode's special tokens apply.
  b.u32("tokenizer.ggml.bos_token_id", 301).raw("tokenizer.ggml.add_bos_token", 7, std::string(1, '\x01'));
  const auto with_bos = gguf_tokenizer(parse(b.bytes()));
  CHECK(with_bos->post_processor() == "template(301 $A)");
  std::vector<int32_t> want = ref.encode("the world");
  want.insert(want.begin(), 301);
  CHECK(with_bos->encode("the world", true) == want);
  CHECK(with_bos->encode("the world") == ref.encode("the world"));
  b.raw("tokenizer.ggml.add_eos_token", 7, std::string(1, '\x01'));
  want.push_back(300);
  CHECK(gguf_tokenizer(parse(b.bytes()))->encode("the world", true) == want);
}

TEST_CASE("a GGUF tokenizer listing one token string twice is refused, named", "[model][gguf]") {
  // 9ae4cdc kept the later id: the byte losing its token was dropped silently
  // ("Hello world 123" encoded as "Hello world 12").
  const json tj = small_tokenizer(false);
  std::vector<std::string> tokens(302);
  for (auto& [tok, id] : tj["model"]["vocab"].items()) tokens[id.get<size_t>()] = tok;
  for (size_t id = 0; id < tokens.size(); ++id)
    if (tokens[id].empty()) tokens[id] = "[PAD" + std::to_string(id) + "]";
  tokens[51] = tokens[50];
  GgufBuilder b;
  b.string("tokenizer.ggml.model", "gpt2").string("tokenizer.ggml.pre", "gpt2");
  b.strings("tokenizer.ggml.tokens", tokens);
  b.strings("tokenizer.ggml.merges", tj["model"]["merges"].get<std::vector<std::string>>());
  CHECK_THROWS_WITH(gguf_tokenizer(parse(b.bytes())),
                    Catch::Contains(": metadata \"tokenizer.ggml.tokens\" lists " + json(tokens[50]).dump() + " twice, as ids 50 and 51"));
}

TEST_CASE("malformed GGUF files get named errors", "[model][gguf]") {
  using B = GgufBuilder;
  const std::string good = small_file().bytes();
  REQUIRE_NOTHROW(parse(good));
  auto with = [&](size_t at, const std::string& bytes) { return good.substr(0, at) + bytes + good.substr(at + bytes.size()); };
  // Offsets in small_file(): magic 0, version 4, tensor_count 8, kv_count 16, key length 24, key 32,
  // type 37, value 41, tensor name length 45, name 53, n_dims 54, ne 58 and 66, type 74, offset 78.
  CHECK_THROWS_WITH(parse(""), "test.gguf: truncated file: the magic needs 4 bytes at offset 0, the file ends at 0");
  CHECK_THROWS_WITH(parse(with(0, "GGUX")), "test.gguf: not a GGUF file: magic \"GGUX\", expected \"GGUF\"");
  CHECK_THROWS_WITH(parse(with(0, "\x7f" "ELF")), "test.gguf: not a GGUF file: magic \"\\x7fELF\", expected \"GGUF\"");
  CHECK_THROWS_WITH(parse(with(4, B::le(1, 4))), "test.gguf: version: GGUF version 1 (32-bit counts) is not supported, only 2 and 3");
  CHECK_THROWS_WITH(parse(with(4, B::le(4, 4))), "test.gguf: version: GGUF version 4 is not supported, only 2 and 3");
  CHECK_THROWS_WITH(parse(with(4, std::string("\0\0\0\3", 4))), "test.gguf: version: big-endian GGUF (version 3) is not supported");
  CHECK_THROWS_WITH(parse(good.substr(0, 20)), "test.gguf: truncated file: kv_count needs 8 bytes at offset 16, the file ends at 20");
  CHECK_THROWS_WITH(parse(with(8, B::le(uint64_t{1} << 40, 8))),
                    "test.gguf: tensor_count 1099511627776 cannot fit in the " + std::to_string(good.size() - 24) +
                        " bytes after the header (each tensor info takes at least 32)");
  CHECK_THROWS_WITH(parse(with(16, B::le(~uint64_t{0}, 8))),
                    "test.gguf: kv_count 18446744073709551615 cannot fit in the " + std::to_string(good.size() - 24) +
                        " bytes after the header (each key/value takes at least 13)");
  CHECK_THROWS_WITH(parse(with(24, B::le(uint64_t{1} << 62, 8))),
                    "test.gguf: metadata[0] key: string length 4611686018427387904 runs past the end of the file (" +
                        std::to_string(good.size() - 32) + " bytes left at offset 32)");
  CHECK_THROWS_WITH(parse(with(37, B::le(13, 4))), "test.gguf: metadata \"a.key\": unknown value type 13 (0..12)");
  CHECK_THROWS_WITH(parse(with(74, B::le(99, 4))), "test.gguf: tensor \"t\": unknown tensor type 99");
  CHECK_THROWS_WITH(parse(with(74, B::le(10, 4))),
                    "test.gguf: tensor \"t\": tensor type Q2_K (10) is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  CHECK_THROWS_WITH(parse(with(74, B::le(8, 4))),
                    "test.gguf: tensor \"t\": ne[0] = 4 is not a multiple of Q8_0's block of 32 values");
  CHECK_THROWS_WITH(parse(with(54, B::le(5, 4))), "test.gguf: tensor \"t\": n_dims must be in [1, 4], got 5");
  CHECK_THROWS_WITH(parse(with(54, B::le(0, 4))), "test.gguf: tensor \"t\": n_dims must be in [1, 4], got 0");
  CHECK_THROWS_WITH(parse(with(58, B::le(0, 8))), "test.gguf: tensor \"t\": ne[0] = 0 is zero or makes the element count overflow");
  CHECK_THROWS_WITH(parse(with(58, B::le(uint64_t{1} << 40, 8) + B::le(uint64_t{1} << 40, 8))),
                    "test.gguf: tensor \"t\": ne[1] = 1099511627776 is zero or makes the element count overflow");
  CHECK_THROWS_WITH(parse(with(58, B::le(8, 8))),
                    "test.gguf: tensor \"t\": 64 bytes of data at offset 0 run past the end of the data section (32 bytes): truncated file?");
  CHECK_THROWS_WITH(parse(with(78, B::le(4, 8))), "test.gguf: tensor \"t\": offset 4 is not a multiple of the alignment 32");
  CHECK_THROWS_WITH(parse(with(78, B::le(uint64_t{1} << 63, 8))),
                    "test.gguf: tensor \"t\": 32 bytes of data at offset 9223372036854775808 run past the end of the data section (32 bytes): truncated file?");
  CHECK_THROWS_WITH(parse(good.substr(0, good.size() - 1)),
                    "test.gguf: tensor \"t\": 32 bytes of data at offset 0 run past the end of the data section (31 bytes): truncated file?");
  // Every cut of the file is a named error, never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    CAPTURE(n);
    CHECK_THROWS_AS(parse(good.substr(0, n)), Error);
  }
  CHECK_THROWS_WITH(parse(B().u32("k", 1).u32("k", 2).bytes()), "test.gguf: metadata[1]: duplicate key \"k\"");
  CHECK_THROWS_WITH(parse(B().tensor_f32("t", {1}, {1}).tensor_f32("t", {1}, {2}).bytes()), "test.gguf: tensor \"t\": duplicate tensor name");
  CHECK_THROWS_WITH(parse(B().raw("b", 7, "\x02").bytes()), "test.gguf: metadata \"b\": a bool must be 0 or 1, got 2");
  CHECK_THROWS_WITH(parse(B().raw("general.alignment", 4, B::le(48, 4)).bytes()),
                    "test.gguf: metadata \"general.alignment\" must be a power of two, got 48");
  CHECK_THROWS_WITH(parse(B().raw("general.alignment", 10, B::le(64, 8)).bytes()),
                    "test.gguf: metadata \"general.alignment\" must be a uint32, got uint64");
  CHECK_THROWS_WITH(parse(B().raw("a", 9, B::le(4, 4) + B::le(uint64_t{1} << 61, 8)).bytes()),
                    "test.gguf: metadata \"a\": array count 2305843009213693952 of uint32 needs at least 4 bytes each, only 15 bytes are left at offset 49");
  std::string deep;
  for (int k = 0; k < 9; ++k) deep += B::le(9, 4) + B::le(1, 8);
  CHECK_THROWS_WITH(parse(B().raw("d", 9, deep).bytes()),
                    "test.gguf: metadata \"d\"[0][0][0][0][0][0][0][0]: arrays nested deeper than 8");
  {  // overlapping tensor data
    B o;
    o.tensor_f32("a", {8}, std::vector<float>(8, 1.0f)).tensor_f32("b", {8}, std::vector<float>(8, 2.0f));
    std::string bytes = o.bytes();
    const size_t b_offset = bytes.find(std::string("\x01\x00\x00\x00\x00\x00\x00\x00" "b", 9)) + 9 + 4 + 8 + 4;  // b's offset field
    bytes.replace(b_offset, 8, B::le(0, 8));
    CHECK_THROWS_WITH(parse(bytes), "test.gguf: tensor \"b\": data at offset 0 overlaps tensor \"a\" [0, 32)");
  }
}

TEST_CASE("GGUF Llama metadata it cannot run gets named errors", "[model][gguf]") {
  const LlamaConfig c = tiny_config(4, 2, 80, true);
  const TensorMap w = llama_random_weights(c, 3, 0.2);
  const std::string good = llama_gguf(c, w, true);
  REQUIRE_NOTHROW(gguf_llama_weights(parse(good), gguf_llama_config(parse(good))));
  auto edited = [&](const std::function<void(GgufBuilder&)>& edit) {
    GgufBuilder b;
    b.string("general.architecture", "llama").u32("llama.context_length", 64).u32("llama.embedding_length", 32);
    b.u32("llama.block_count", 2).u32("llama.feed_forward_length", 72).u32("llama.attention.head_count", 4);
    b.f32("llama.attention.layer_norm_rms_epsilon", 1e-6f).u32("llama.vocab_size", 80);
    edit(b);
    return parse(b.bytes());
  };
  CHECK_NOTHROW(gguf_llama_config(edited([](GgufBuilder&) {})));
  CHECK_THROWS_WITH(gguf_llama_config(parse(GgufBuilder().string("general.architecture", "gpt2").bytes())),
                    "test.gguf: metadata \"general.architecture\" is \"gpt2\": only \"llama\" (Llama, SmolLM, Mistral-style dense models) is supported");
  CHECK_THROWS_WITH(gguf_llama_config(parse(GgufBuilder().string("general.architecture", "llama").bytes())),
                    "test.gguf: metadata \"llama.embedding_length\" is missing");
  CHECK_THROWS_WITH(gguf_llama_config(edited([](GgufBuilder& b) { b.u32("llama.attention.head_count_kv", 3); })),
                    "test.gguf: metadata \"llama.attention.head_count\" (4) must be a multiple of \"llama.attention.head_count_kv\" (3)");
  CHECK_THROWS_WITH(gguf_llama_config(edited([](GgufBuilder& b) { b.u32("llama.rope.dimension_count", 4); })),
                    "test.gguf: metadata \"llama.rope.dimension_count\" = 4: partial rotary embeddings are not implemented (head dimension 8)");
  CHECK_THROWS_WITH(gguf_llama_config(edited([](GgufBuilder& b) { b.string("llama.rope.scaling.type", "linear"); })),
                    "test.gguf: metadata \"llama.rope.scaling.type\" is \"linear\": rope scaling is not implemented (plain RoPE only)");
  CHECK_THROWS_WITH(gguf_llama_config(edited([](GgufBuilder& b) { b.u32("llama.expert_count", 8); })),
                    "test.gguf: metadata \"llama.expert_count\" is set: mixture-of-experts models are not implemented");
  CHECK_THROWS_WITH(gguf_llama_config(edited([](GgufBuilder& b) { b.i32s("llama.attention.head_count_kv", {2, 2}); })),
                    "test.gguf: metadata \"llama.attention.head_count_kv\" must be an integer, got array");
  CHECK_THROWS_WITH(gguf_llama_config(edited([](GgufBuilder& b) { b.tensor_f32("rope_freqs.weight", {4}, {1, 1, 1, 1}); })),
                    "test.gguf: tensor \"rope_freqs.weight\" is present: Llama-3.1 style rope scaling is not implemented");
  const LlamaConfig cfg = gguf_llama_config(parse(good));
  CHECK_THROWS_WITH(gguf_llama_weights(edited([](GgufBuilder& b) { b.tensor_f32("blk.0.attn_foo.weight", {1}, {1}); }), cfg),
                    "test.gguf: tensor \"blk.0.attn_foo.weight\" is not a Llama tensor this reader knows");
  CHECK_THROWS_WITH(gguf_llama_weights(edited([](GgufBuilder& b) { b.tensor_f32("blk.5.attn_norm.weight", {32}, std::vector<float>(32)); }), cfg),
                    "test.gguf: tensor \"blk.5.attn_norm.weight\": layer 5 is past \"llama.block_count\" = 2");
  TensorMap narrow = w;
  narrow["model.norm.weight"].shape = {16};
  narrow["model.norm.weight"].data.resize(16);
  CHECK_THROWS_WITH(gguf_llama_weights(parse(llama_gguf(c, narrow, true)), cfg),
                    "test.gguf: tensor \"model.norm.weight\" has shape [16], the config implies [32]");
  CHECK_THROWS_WITH(gguf_llama_weights(edited([](GgufBuilder&) {}), cfg),
                    "test.gguf: tensor \"model.embed_tokens.weight\" is missing (expected shape [80, 32])");
  CHECK_THROWS_WITH(gguf_tokenizer(parse(GgufBuilder().strings("tokenizer.ggml.tokens", {"a"}).string("tokenizer.ggml.model", "llama").bytes())),
                    "test.gguf: metadata \"tokenizer.ggml.model\" is \"llama\": only byte-level BPE (\"gpt2\") is supported, not SentencePiece (\"llama\") or others");
  CHECK_THROWS_WITH(gguf_tokenizer(parse(GgufBuilder()
                                             .strings("tokenizer.ggml.tokens", {"a"})
                                             .string("tokenizer.ggml.model", "gpt2")
                                             .string("tokenizer.ggml.pre", "qwen2")
                                             .bytes())),
                    "test.gguf: metadata \"tokenizer.ggml.pre\" is \"qwen2\": this pre-tokenizer is not supported (smollm, starcoder, refact, "
                    "command-r, codeshell, exaone, gpt2, mpt, olmo, jais, llama-bpe)");
  CHECK(gguf_tokenizer(parse(GgufBuilder().u32("x", 1).bytes())) == nullptr);
}

TEST_CASE("GGUF files with random bytes changed give a named error or load", "[model][gguf]") {
  // A Llama with a tokenizer; every mutant goes through the reader, the Llama
  // mapping and the tokenizer, and either loads or throws Error, nothing else.
  const LlamaConfig c = tiny_config(2, 1, 260, true, 1, 16);
  std::vector<std::string> tokens;
  for (int k = 0; k < 256; ++k) tokens.push_back(byte_char(k));
  for (const char* t : {"ab", "<s>", "</s>", "xy"}) tokens.push_back(t);
  const std::string good = llama_gguf(c, llama_random_weights(c, 1, 0.2), true, 0, [&](GgufBuilder& b) {
    b.string("tokenizer.ggml.model", "gpt2").string("tokenizer.ggml.pre", "smollm").strings("tokenizer.ggml.tokens", tokens);
    b.i32s("tokenizer.ggml.token_type", std::vector<int32_t>(tokens.size(), 1));
    b.strings("tokenizer.ggml.merges", {"a b"}).u32("tokenizer.ggml.eos_token_id", 258);
  });
  auto load = [](const std::string& bytes) {
    const GgufFile f = parse(bytes);
    const LlamaConfig cfg = gguf_llama_config(f);
    gguf_llama_weights(f, cfg);
    return gguf_tokenizer(f);
  };
  REQUIRE(load(good)->encode("ab") == std::vector<int32_t>{256});
  const uint64_t seed = GENERATE(1u, 2u, 3u, 4u);
  CAPTURE(seed);
  SplitMix64 rng{seed};
  int loaded = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string m = good;
    const int edits = 1 + static_cast<int>(rng.next() % 4);
    for (int e = 0; e < edits; ++e) {
      // mostly in the header, metadata and tensor infos, where the sizes live
      const size_t at = static_cast<size_t>(rng.next() % (rng.next() % 4 == 0 ? m.size() : std::min<size_t>(m.size(), 4096)));
      m[at] = static_cast<char>(rng.next() & 0xff);
    }
    CAPTURE(trial);
    try {
      load(m);
      ++loaded;
    } catch (const Error&) {
      ++refused;
    }
  }
  CAPTURE(loaded, refused);
  CHECK(loaded + refused == 300);
  CHECK(refused > 50);  // most edits of the structure are caught
  CHECK(loaded > 10);   // edits of string contents and weights still load
}
