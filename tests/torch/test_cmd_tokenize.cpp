// `triescope tokenize` in-process (the peer tests drive it against Hugging
// Face tokenizers; these cases need no Python): its three modes and its errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/common/file_io.h"
#include "tests/torch/cli_run_captured.h"
#include "tests/common/fresh_test_dir.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope;
using namespace triescope::test;
namespace fs = std::filesystem;

TEST_CASE("triescope tokenize: describe, encode, decode, jsonl, named errors", "[model]") {
  const fs::path dir = fresh_test_dir("cmd_tokenize");
  const std::string tok = (dir / "tokenizer.json").string();
  file_write_atomic(tok, small_tokenizer().dump());

  CliRun r = run_cli({"tokenize", tok});
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("302 ids, normalizer none, pre-tokenizer ByteLevel(gpt2)"));

  r = run_cli({"tokenize", tok, "a<|endoftext|> the"});
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);
  const int32_t the = j["ids"][2].get<int32_t>();
  CHECK(j["ids"] == json::array({'a', 300, the}));
  CHECK(j["tokens"] == json::array({"a", "<|endoftext|>", " the"}));

  r = run_cli({"tokenize", tok, "--decode", "97 300 " + std::to_string(the)});
  CHECK(r.out == "a<|endoftext|> the\n");
  r = run_cli({"tokenize", tok, "--decode", "97 300", "--skip-special"});
  CHECK(r.out == "a\n");

  const std::string lines = (dir / "lines.jsonl").string();
  file_write_atomic(lines, "\"a the\"\n\n[97, 300]\n{\"decode\": [97, 300], \"skip_special_tokens\": true}\n");
  r = run_cli({"tokenize", tok, "--jsonl", lines});
  CHECK(r.out == "[97," + std::to_string(the) + "]\n\"a<|endoftext|>\"\n\"a\"\n");

  file_write_atomic(lines, "\"ok\"\n[97, -1]\n");
  r = run_cli({"tokenize", tok, "--jsonl", lines});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("lines.jsonl:2: ids must be non-negative integers"));
  // 100,000 nested arrays: a SIGSEGV on 9ae4cdc; now the depth-limited reader's error with line and column.
  file_write_atomic(lines, "\"ok\"\n" + std::string(100000, '[') + std::string(100000, ']') + "\n");
  r = run_cli({"tokenize", tok, "--jsonl", lines});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("lines.jsonl:2:65: JSON nested deeper than 64 levels"));
  r = run_cli({"tokenize", tok, "--decode", "97 x"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("\"x\" is not a token id"));
  r = run_cli({"tokenize", tok, "ab\xff"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("not valid UTF-8 at byte 2"));
  r = run_cli({"tokenize", tok, "text", "--decode", "1"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("give one of TEXT, --decode IDS, --jsonl FILE"));
  r = run_cli({"tokenize", (dir / "missing.json").string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("missing.json"));
}
