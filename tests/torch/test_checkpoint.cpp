// Checkpoints: safetensors write/read round trips (F32, F16, BF16, sharded)
// give the same logits; every malformed checkpoint gets a named error.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/common/file_io.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/model_factory.h"
#include "core/trace/trace.h"
#include "tests/common/fresh_test_dir.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;
namespace fs = std::filesystem;

namespace {
std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}
Logits logits_of(Model& m) { return run_causal(m, {1, 7, 3, 60, 12, 5}); }
}  // namespace

TEST_CASE("checkpoint round trip gives the same logits", "[model]") {
  const std::string dtype = GENERATE(std::string("F32"), std::string("F16"), std::string("BF16"));
  const bool tied = GENERATE(false, true);
  CAPTURE(dtype, tied);
  const LlamaConfig c = tiny_config(4, 2, 80, tied);
  TensorMap w = llama_random_weights(c, 21, 0.2);
  const fs::path dir = fresh_test_dir("torch/roundtrip_" + dtype + (tied ? "_tied" : ""));
  llama_checkpoint_write(dir.string(), c, w, dtype);
  auto loaded = TorchTransformer::load_dir(dir.string());
  CHECK(loaded->config().to_json() == c.to_json());
  // The reference holds the weights rounded the way the file stores them.
  for (auto& [name, t] : w)
    for (auto& v : t.data) {
      if (dtype == "F16") v = half_to_float(float_to_half(v));
      if (dtype == "BF16") v = bf16_to_float(float_to_bf16(v));
    }
  TorchTransformer ref(c, w, {});
  const Logits a = logits_of(*loaded), b = logits_of(ref);
  CHECK(max_abs_diff(a.data.data(), b.data.data(), static_cast<int32_t>(a.data.size())) == 0.0f);
}

TEST_CASE("sharded checkpoint (model.safetensors.index.json) loads", "[model]") {
  const LlamaConfig c = tiny_config(4, 4, 64);
  const TensorMap w = llama_random_weights(c, 5, 0.2);
  const fs::path dir = fresh_test_dir("torch/sharded");
  TensorMap a, b;
  json index = {{"metadata", json::object()}, {"weight_map", json::object()}};
  for (const auto& [name, t] : w) {
    const bool first = name.find("layers.1.") == std::string::npos;
    (first ? a : b)[name] = t;
    index["weight_map"][name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  safetensors_write((dir / "model-00001-of-00002.safetensors").string(), a);
  safetensors_write((dir / "model-00002-of-00002.safetensors").string(), b, "BF16");
  file_write_atomic((dir / "model.safetensors.index.json").string(), index.dump());
  file_write_atomic((dir / "config.json").string(), c.to_json().dump());
  auto loaded = TorchTransformer::load_dir(dir.string());
  TensorMap wr = w;
  for (auto& [name, t] : wr)
    if (b.count(name))
      for (auto& v : t.data) v = bf16_to_float(float_to_bf16(v));
  TorchTransformer ref(c, wr, {});
  const Logits x = logits_of(*loaded), y = logits_of(ref);
  CHECK(max_abs_diff(x.data.data(), y.data.data(), static_cast<int32_t>(x.data.size())) == 0.0f);

  // An index naming a tensor its shard does not hold.
  index["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors";
  file_write_atomic((dir / "model.safetensors.index.json").string(), index.dump());
  REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("model.norm.weight") && Catch::Contains("does not hold it"));
}

TEST_CASE("half and bfloat16 conversions", "[model]") {
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(half_to_float(0xc000) == -2.0f);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(half_to_float(0x7bff) == 65504.0f);
  CHECK(std::isinf(half_to_float(0x7c00)));
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(1e6f) == 0x7c00);
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie rounds to even
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  for (uint32_t h = 0; h < 0x7c00; h += 7) CHECK(float_to_half(half_to_float(static_cast<uint16_t>(h))) == h);
}

TEST_CASE("bad checkpoints get named errors", "[model]") {
  const LlamaConfig c = tiny_config(4, 2, 64);
  const TensorMap w = llama_random_weights(c, 9, 0.2);
  const fs::path dir = fresh_test_dir("torch/bad");
  const fs::path st = dir / "model.safetensors";
  auto rewrite = [&](const TensorMap& m) {
    safetensors_write(st.string(), m);
    file_write_atomic((dir / "config.json").string(), c.to_json().dump());
  };

  SECTION("missing tensor") {
    TensorMap m = w;
    m.erase("model.layers.1.mlp.up_proj.weight");
    rewrite(m);
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()),
                        Catch::Contains(st.string()) && Catch::Contains("\"model.layers.1.mlp.up_proj.weight\" is missing"));
  }
  SECTION("wrong shape") {
    TensorMap m = w;
    m["model.layers.0.self_attn.k_proj.weight"].shape = {8, 64};  // 512 values, right count, wrong shape
    rewrite(m);
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()),
                        Catch::Contains("model.layers.0.self_attn.k_proj.weight") && Catch::Contains("has shape [8, 64]") &&
                            Catch::Contains("[16, 32]"));
  }
  SECTION("unknown dtype") {
    rewrite(w);
    std::string bytes = read_bytes(st);
    const auto pos = bytes.find("\"F32\"");
    REQUIRE(pos != std::string::npos);
    bytes.replace(pos, 5, "\"I32\"");
    write_bytes(st, bytes);
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()),
                        Catch::Contains(st.string()) && Catch::Contains("dtype \"I32\" is not supported"));
  }
  SECTION("truncated file") {
    rewrite(w);
    const std::string bytes = read_bytes(st);
    write_bytes(st, bytes.substr(0, bytes.size() - 100));
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains(st.string()) && Catch::Contains("truncated"));
  }
  SECTION("header length past the end") {
    rewrite(w);
    std::string bytes = read_bytes(st);
    bytes[5] = '\x01';  // header length += 2^40
    write_bytes(st, bytes);
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains(st.string()) && Catch::Contains("runs past the end"));
    write_bytes(st, "abc");
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("truncated"));
  }
  SECTION("header that is not JSON or offsets that disagree with the shape") {
    rewrite(w);
    std::string bytes = read_bytes(st);
    bytes[9] = '#';
    write_bytes(st, bytes);
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("model.safetensors: header:1:2: malformed JSON"));
    rewrite(w);
    bytes = read_bytes(st);
    const auto pos = bytes.find("\"shape\":[64,32]");
    REQUIRE(pos != std::string::npos);
    bytes.replace(pos, 15, "\"shape\":[64,31]");
    write_bytes(st, bytes);
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("data_offsets give"));
  }
  SECTION("bad config") {
    rewrite(w);
    const fs::path cp = dir / "config.json";
    json j = c.to_json();
    j["num_key_value_heads"] = 3;
    file_write_atomic(cp.string(), j.dump());
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()),
                        Catch::Contains(cp.string()) && Catch::Contains("must be a multiple of num_key_value_heads"));
    j = c.to_json();
    j.erase("hidden_size");
    file_write_atomic(cp.string(), j.dump());
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("missing field hidden_size"));
    j = c.to_json();
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
    file_write_atomic(cp.string(), j.dump());
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("rope_scaling"));
    j = c.to_json();
    j["mlp_bias"] = true;
    file_write_atomic(cp.string(), j.dump());
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("mlp_bias"));
    j = c.to_json();
    j["model_type"] = "gpt2";
    file_write_atomic(cp.string(), j.dump());
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("not a Llama-architecture model"));
    file_write_atomic(cp.string(), "{\"vocab_size\": 64,");
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains(cp.string()));
  }
  SECTION("no weights at all") {
    file_write_atomic((dir / "config.json").string(), c.to_json().dump());
    fs::remove(st);
    REQUIRE_THROWS_WITH(TorchTransformer::load_dir(dir.string()), Catch::Contains("has neither model.safetensors"));
  }
}

TEST_CASE("attention biases (Qwen2 style) load and are used", "[model]") {
  LlamaConfig c = tiny_config(4, 2, 64);
  c.attention_bias = true;
  const TensorMap w = llama_random_weights(c, 13, 0.2);
  REQUIRE(w.count("model.layers.0.self_attn.k_proj.bias"));
  const fs::path dir = fresh_test_dir("torch/bias");
  llama_checkpoint_write(dir.string(), c, w);
  auto loaded = TorchTransformer::load_dir(dir.string());
  TorchTransformer ref(c, w, {});
  const Logits a = logits_of(*loaded), b = logits_of(ref);
  CHECK(max_abs_diff(a.data.data(), b.data.data(), static_cast<int32_t>(a.data.size())) == 0.0f);
  TensorMap zero = w;  // zeroing the biases changes the logits: they are applied
  for (auto& [name, t] : zero)
    if (name.find(".bias") != std::string::npos) std::fill(t.data.begin(), t.data.end(), 0.0f);
  TorchTransformer nob(c, zero, {});
  const Logits z = logits_of(nob);
  CHECK(max_abs_diff(a.data.data(), z.data.data(), static_cast<int32_t>(a.data.size())) > 1e-3f);
}

TEST_CASE("Llama's attention_bias biases o_proj too; Qwen2's does not", "[model]") {
  const json base = tiny_config(4, 2, 64).to_json();
  json llama = base, qwen = base;
  llama["attention_bias"] = true;
  qwen["model_type"] = "qwen2";
  qwen.erase("attention_bias");  // Qwen2's q/k/v biases are implied
  const LlamaConfig cl = llama_config_parse(llama, "llama.json"), cq = llama_config_parse(qwen, "qwen2.json");
  CHECK((cl.attention_bias && cl.o_proj_bias));
  CHECK((cq.attention_bias && !cq.o_proj_bias));
  const TensorMap w = llama_random_weights(cl, 19, 0.2);
  REQUIRE(w.count("model.layers.1.self_attn.o_proj.bias"));
  CHECK_FALSE(llama_random_weights(cq, 19, 0.2).count("model.layers.1.self_attn.o_proj.bias"));
  for (const LlamaConfig& c : {cl, cq}) {  // the config written is read back as the same kind
    const fs::path dir = fresh_test_dir(c.o_proj_bias ? "torch/bias_llama" : "torch/bias_qwen2");
    llama_checkpoint_write(dir.string(), c, llama_random_weights(c, 19, 0.2));
    CHECK(llama_config_load((dir / "config.json").string()).o_proj_bias == c.o_proj_bias);
    CHECK_NOTHROW(TorchTransformer::load_dir(dir.string()));
  }
  TorchTransformer with(cl, w, {});
  TensorMap zero = w;  // zeroing only the o_proj biases changes the logits: they are applied
  for (auto& [name, t] : zero)
    if (name.find("o_proj.bias") != std::string::npos) std::fill(t.data.begin(), t.data.end(), 0.0f);
  TorchTransformer without(cl, zero, {});
  const Logits a = logits_of(with), z = logits_of(without);
  CHECK(max_abs_diff(a.data.data(), z.data.data(), static_cast<int32_t>(a.data.size())) > 1e-3f);
}

TEST_CASE("model directory with tokenizer.json: text in, token strings in the trace", "[model]") {
  torch_models_register();
  const LlamaConfig c = tiny_config(4, 2, 302);  // the small tokenizer's ids reach 301
  const fs::path dir = fresh_test_dir("torch/with_tokenizer");
  llama_checkpoint_write(dir.string(), c, llama_random_weights(c, 17, 0.2));
  file_write_atomic((dir / "tokenizer.json").string(), small_tokenizer().dump());
  const json mj = {{"type", "transformer"}, {"path", dir.string()}};
  auto m = model_from_json(JsonObjectReader(mj, "sample.json", "model"));
  REQUIRE(model_has_tokenizer(*m));
  const std::string text = "the world<|endoftext|> caf\xc3\xa9";
  const auto ids = model_encode_text(*m, text);
  CHECK(model_decode_text(*m, ids) == text);
  const auto vocab = m->vocab_strings();
  REQUIRE(vocab.size() == 302u);
  CHECK(vocab[300] == "<|endoftext|>");
  BeamConfig cfg;
  cfg.num_beams = 3;
  cfg.max_new_tokens = 4;
  MemoryTraceSink sink;
  trie_beam_search(*m, ids, cfg, &sink);
  REQUIRE(!sink.records.empty());
  CHECK(sink.records.front()["vocab"].size() == 302u);
  CHECK(sink.records.front().dump().find("<|endoftext|>") != std::string::npos);

  // A config.json pasted into random_init works; that model has no tokenizer.
  const json no_tok = {{"type", "transformer"}, {"random_init", c.to_json()}};
  auto plain = model_from_json(JsonObjectReader(no_tok, "sample.json", "model"));
  CHECK(!model_has_tokenizer(*plain));
  CHECK(plain->vocab_strings().empty());
  REQUIRE_THROWS_WITH(model_encode_text(*plain, "the"), Catch::Contains("no tokenizer"));
}
