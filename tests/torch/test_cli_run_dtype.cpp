// `triescope run --dtype` in-process: bf16 reaches a transformer sample's
// model (the trace header says so) and is refused by name for other models
// and other values, with no trace written.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/torch/cli_run_captured.h"
#include "tests/common/fresh_test_dir.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;
namespace fs = std::filesystem;

namespace {
json trace_header(const fs::path& trace) {
  std::ifstream in(trace);
  std::string first;
  std::getline(in, first);
  return json::parse(first);
}
}  // namespace

TEST_CASE("run --dtype bf16: the transformer sample's model in bf16; other models and values refused by name", "[model][bf16]") {
  const fs::path dir = fresh_test_dir("cli_run_dtype");
  const std::string samples = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/";
  const std::string tiny = samples + "transformer_tiny.json";

  CliRun r = run_cli({"run", tiny, "--dtype", "bf16", "--quiet", "--out", (dir / "bf16.jsonl").string()});
  REQUIRE(r.rc == 0);
  const json model = trace_header(dir / "bf16.jsonl")["model"];
  CHECK(model["dtype"] == "bfloat16");
  CHECK(model["source"]["seed"] == 7);  // the rest of the sample's model object as written
  r = run_cli({"run", tiny, "--quiet", "--out", (dir / "fp32.jsonl").string()});
  REQUIRE(r.rc == 0);
  CHECK(trace_header(dir / "fp32.jsonl")["model"]["dtype"] == "float32");

  r = run_cli({"run", samples + "synthetic_long.json", "--dtype", "bf16", "--out", (dir / "synthetic.jsonl").string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("synthetic_long.json: model.type is \"synthetic\"; --dtype applies to transformer models only"));
  CHECK_FALSE(fs::exists(dir / "synthetic.jsonl"));
  r = run_cli({"run", tiny, "--dtype", "fp16", "--out", (dir / "fp16.jsonl").string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("--dtype must be fp32 or bf16, got \"fp16\""));
  CHECK_FALSE(fs::exists(dir / "fp16.jsonl"));
}
