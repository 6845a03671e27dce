// The CLI's checkpoint commands in-process: `logits` writes exactly the
// logits of a causal run, `convert-checkpoint` rewrites what the loader read
// (bit for bit in F32, rounded as float_to_bf16 / float_to_half otherwise),
// and bad input is refused by name with no output file left behind.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "app/commands.h"
#include "core/common/file_io.h"
#include "tests/common/fresh_test_dir.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;
namespace fs = std::filesystem;

namespace {
int run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "triescope");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::cli_main(static_cast<int>(argv.size()), argv.data());
}

fs::path checkpoint(const fs::path& dir, const std::string& dtype, uint64_t seed) {
  llama_checkpoint_write(dir.string(), tiny_config(4, 2, 96, false), llama_random_weights(tiny_config(4, 2, 96, false), seed, 0.2), dtype);
  return dir;
}
}  // namespace

TEST_CASE("logits writes the logits of each prompt run causally", "[model]") {
  const fs::path d = fresh_test_dir("torch_cli/logits");
  const fs::path model = checkpoint(d / "model", "BF16", 41);
  const std::vector<std::vector<int32_t>> prompts = {{3}, {1, 7, 3, 60, 12, 5}, {95, 0, 95, 0, 44, 44, 44, 2, 9}};
  file_write_atomic((d / "prompts.json").string(), json(prompts).dump());
  REQUIRE(run_cli({"logits", model.string(), "--prompts", (d / "prompts.json").string(), "--out", (d / "l.safetensors").string()}) == 0);
  const TensorMap out = safetensors_read((d / "l.safetensors").string());
  REQUIRE(out.size() == prompts.size());
  auto ref = TorchTransformer::load_dir(model.string());
  for (size_t i = 0; i < prompts.size(); ++i) {
    CAPTURE(i);
    const HostTensor& t = out.at("logits." + std::to_string(i));
    const Logits want = run_causal(*ref, prompts[i]);
    CHECK(t.shape == std::vector<int64_t>{static_cast<int64_t>(prompts[i].size()), 96});
    CHECK(t.data == want.data);
  }
}

TEST_CASE("logits refuses bad prompts by name and writes nothing", "[model]") {
  const fs::path d = fresh_test_dir("torch_cli/logits_bad");
  const fs::path model = checkpoint(d / "model", "F32", 42);
  // The last: 100,000 nested arrays, a SIGSEGV on 9ae4cdc (a parser without the depth limit).
  const std::vector<std::string> bad = {R"([[1, 2, 96]])", R"([])", R"([[]])", R"({"a": 1})", R"([[1, -1]])", R"(["text"])", "not json",
                                        std::string(100000, '[') + std::string(100000, ']')};
  for (const auto& text : bad) {
    CAPTURE(text);
    file_write_atomic((d / "p.json").string(), text);
    CHECK(run_cli({"logits", model.string(), "--prompts", (d / "p.json").string(), "--out", (d / "l.safetensors").string()}) == 2);
    CHECK_FALSE(fs::exists(d / "l.safetensors"));
  }
}

TEST_CASE("convert-checkpoint rewrites what the loader read", "[model]") {
  const fs::path d = fresh_test_dir("torch_cli/convert");
  const fs::path src = checkpoint(d / "src", "F32", 43);
  const TensorMap w = safetensors_read_dir(src.string());
  for (const std::string dtype : {"F32", "BF16", "F16"}) {
    CAPTURE(dtype);
    const fs::path out = d / dtype;
    REQUIRE(run_cli({"convert-checkpoint", src.string(), out.string(), "--dtype", dtype}) == 0);
    const TensorMap back = safetensors_read((out / "model.safetensors").string());
    REQUIRE(back.size() == w.size());
    for (const auto& [name, t] : w) {
      CAPTURE(name);
      std::vector<float> want = t.data;
      for (float& v : want) v = dtype == "BF16" ? bf16_to_float(float_to_bf16(v)) : dtype == "F16" ? half_to_float(float_to_half(v)) : v;
      CHECK(back.at(name).data == want);
    }
    const json cfg = json::parse(file_read_all((out / "config.json").string()));
    CHECK(cfg.at("torch_dtype") == (dtype == "F32" ? "float32" : dtype == "F16" ? "float16" : "bfloat16"));
    CHECK(cfg.at("hidden_size") == 32);
  }
  // A half checkpoint widened to F32 is bit for bit what the loader read.
  REQUIRE(run_cli({"convert-checkpoint", (d / "BF16").string(), (d / "back").string()}) == 0);
  CHECK(safetensors_read((d / "back" / "model.safetensors").string()).at("lm_head.weight").data ==
        safetensors_read_dir((d / "BF16").string()).at("lm_head.weight").data);
  CHECK(run_cli({"convert-checkpoint", src.string(), src.string()}) == 2);
  CHECK(run_cli({"convert-checkpoint", src.string(), (d / "x").string(), "--dtype", "F64"}) == 2);
  CHECK_FALSE(fs::exists(d / "x"));
}
