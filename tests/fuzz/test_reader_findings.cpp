// Every finding of issue 16 (crashes, escaped exceptions, silent wrong reads)
// as the exact error its reproducer in regressions/ now gets, plus the
// findings' original sizes (80,000 levels of nesting) built here, the
// truncated trace that opens with a warning, and `run` stopped by a signal.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "app/commands.h"
#include "core/common/file_io.h"
#include "core/common/output_file.h"
#include "core/config/json_reader.h"
#include "core/constraint/constraint_set.h"
#include "core/decode/run_sample.h"
#include "core/model/torch/bpe_tokenizer.h"
#include "core/model/torch/gguf.h"
#include "core/model/torch/llama_config.h"
#include "core/model/torch/safetensors.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "tests/common/error_of.h"

using namespace triescope;
using triescope::testing::error_of;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(TRIESCOPE_FUZZ_DIR) + "/regressions/";

// A trace as `inspect` reads it: the records, then every step replayed.
void trace_open(const std::string& path) {
  TraceReplay t(trace_read(path), path);
  for (int32_t s : t.steps()) t.at(s);
}

std::string deep(int levels, bool objects) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += objects ? "{\"a\":" : "[";
  s += "1";
  s += std::string(static_cast<size_t>(levels), objects ? '}' : ']');
  return s;
}

}  // namespace

TEST_CASE("findings: deep nesting is refused while parsing, at any depth, in every JSON reader", "[fuzz]") {
  const std::string p = kDir + "sample/";
  CHECK(error_of([&] { sample_load(p + "deep_unknown_key.json"); }) == p + "deep_unknown_key.json:1:1700: JSON nested deeper than 64 levels");
  CHECK(error_of([&] { sample_load(p + "deep_name.json"); }) == p + "deep_name.json:1:112: JSON nested deeper than 64 levels");
  const std::string t = kDir + "trace/";
  CHECK(error_of([&] { trace_open(t + "deep_step_value.jsonl"); }) == t + "deep_step_value.jsonl:2:96: JSON nested deeper than 64 levels");
  CHECK(error_of([&] { trace_open(t + "deep_vocab.jsonl"); }) == t + "deep_vocab.jsonl:1:410: JSON nested deeper than 64 levels");
  CHECK(error_of([&] { safetensors_read(kDir + "safetensors/deep_shape.safetensors"); }) == kDir + "safetensors/deep_shape.safetensors: header:1:91: JSON nested deeper than 64 levels");
  CHECK(error_of([&] { llama_config_load(kDir + "llama_config/deep_field.json"); }) == kDir + "llama_config/deep_field.json:1:183: JSON nested deeper than 64 levels");
  CHECK(error_of([&] { BpeTokenizer::load(kDir + "tokenizer/deep_vocab_id.json"); }) == kDir + "tokenizer/deep_vocab_id.json:1:3239: JSON nested deeper than 64 levels");
  // The sizes that overflowed the stack: 80,000 levels of objects, 200,000 of arrays.
  // The column of the bracket opening level 65: 9 + 5 * 63 for objects (level 1 is the outer one), 65 for arrays.
  CHECK(error_of([&] { json_parse_text("{\"name\":" + deep(80000, true) + "}", "x.json"); }) ==
        "x.json:1:324: JSON nested deeper than 64 levels");
  CHECK(error_of([&] { trace_parse(deep(200000, false) + "\n", "t.jsonl"); }) == "t.jsonl:1:65: JSON nested deeper than 64 levels");
}

TEST_CASE("findings: a key given twice is refused in every JSON reader, named with its object", "[fuzz]") {
  // nlohmann's own builder kept the last value: the trace index's skim and
  // the parse could read different steps, a config its last field.
  CHECK(error_of([&] { sample_load(kDir + "sample/duplicate_key.json"); }) ==
        kDir + "sample/duplicate_key.json: key \"version\" given twice in the top-level object");
  CHECK(error_of([&] { trace_open(kDir + "trace/duplicate_step.jsonl"); }) ==
        kDir + "trace/duplicate_step.jsonl:2: key \"step\" given twice in the top-level object");
  CHECK(error_of([&] { llama_config_load(kDir + "llama_config/duplicate_field.json"); }) ==
        kDir + "llama_config/duplicate_field.json:1: key \"vocab_size\" given twice in the top-level object");
  CHECK(error_of([&] { BpeTokenizer::load(kDir + "tokenizer/duplicate_vocab_token.json"); }) ==
        kDir + "tokenizer/duplicate_vocab_token.json:1: key \"\\xc4\\x81\" given twice in object model.vocab");
  CHECK(error_of([&] { json_parse_text(R"({"a":[1,{"b":{"c":1,"d":2,"c":3}}]})", "x.json"); }) ==
        "x.json:1: key \"c\" given twice in object a[1].b");
  // Equal keys in different objects are fine.
  CHECK(json_parse_text(R"({"a":{"c":1},"b":{"c":2}})", "x.json")["b"]["c"] == 2);
}

TEST_CASE("findings: a number beyond double range is a named error, not the JSON library's out_of_range", "[fuzz]") {
  CHECK(error_of([&] { sample_load(kDir + "sample/number_overflow.json"); }) == kDir + "sample/number_overflow.json:1:567: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '4e404'");
  CHECK(error_of([&] { trace_open(kDir + "trace/number_overflow.jsonl"); }) == kDir + "trace/number_overflow.jsonl:2:39: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '4e404'");
  CHECK(error_of([&] { llama_config_load(kDir + "llama_config/number_overflow.json"); }) == kDir + "llama_config/number_overflow.json:1:121: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '4e404'");
  CHECK(error_of([&] { BpeTokenizer::load(kDir + "tokenizer/number_overflow.json"); }) == kDir + "tokenizer/number_overflow.json:1:3306: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '4e404'");
}

TEST_CASE("findings: .npy shapes whose byte count wraps are refused before any allocation", "[fuzz]") {
  const std::string p = kDir + "constraint_npy/";
  CHECK(error_of([&] { constraint_set_read_npy(p + "shape_2p62_x4_i1.npy", 1000); }) == p + "shape_2p62_x4_i1.npy: .npy data holds 16 bytes, shape (4611686018427387904, 4) of '<i1' needs 2^64 or more");
  CHECK(error_of([&] { constraint_set_read_npy(p + "shape_2p61_x1_i8.npy", 1000); }) == p + "shape_2p61_x1_i8.npy: .npy data holds 16 bytes, shape (2305843009213693952, 1) of '<i8' needs 2^64 or more");
  const std::string q = kDir + "constraint_text/";
  CHECK(error_of([&] { constraint_set_read_text(q + "token_beyond_int64.txt", 1000); }) == q + "token_beyond_int64.txt:2: token 1 \"99999999999999999999\" is not an integer");
  CHECK(error_of([&] { constraint_set_read_text(q + "id_too_long.txt", 1000); }) == q + "id_too_long.txt:1: more than 1024 tokens in one id");
}

TEST_CASE("findings: type errors in tokenizer.json and traces name the field", "[fuzz]") {
  const std::string p = kDir + "tokenizer/";
  CHECK(error_of([&] { BpeTokenizer::load(p + "pre_tokenizer_type_number.json"); }) == p + "pre_tokenizer_type_number.json: pre_tokenizer.type \"\" is not supported (ByteLevel, Split, Digits, Sequence)");
  CHECK(error_of([&] { BpeTokenizer::load(p + "pre_tokenizer_number.json"); }) == p + "pre_tokenizer_number.json: pre_tokenizer must be an object, got 5");
  const std::string t = kDir + "trace/";
  CHECK(error_of([&] { trace_open(t + "phase_number.jsonl"); }) == t + "phase_number.jsonl:2: field phase must be a string, got 5");
  CHECK(error_of([&] { trace_open(t + "gc_slots_before_string.jsonl"); }) == t + "gc_slots_before_string.jsonl:4: gc: field slots_before must be an integer");
}

TEST_CASE("findings: declared sizes are checked before anything is allocated or printed", "[fuzz]") {
  const std::string t = kDir + "trace/";
  CHECK(error_of([&] { trace_open(t + "mask_cols_int32_max.jsonl"); }) == t + "mask_cols_int32_max.jsonl:2: forward.mask.cols must be in [0, 16777216], got 2147483647");
  CHECK(error_of([&] { trace_open(t + "added_id_2e9.jsonl"); }) == t + "added_id_2e9.jsonl:2: added[4]: field id = 2000000000 skips ids: node ids are dense, the next new id is 4");
  CHECK(error_of([&] { trace_open(t + "gc_slots_before_2e9.jsonl"); }) == t + "gc_slots_before_2e9.jsonl:4: gc: field slots_before must be in [0, 16777216], got 2000000000");
  CHECK(error_of([&] { trace_open(t + "kv_slots_2e9.jsonl"); }) == t + "kv_slots_2e9.jsonl:2: kv: field slots must be in [0, 16777216], got 2000000000");
  CHECK(error_of([&] { trace_open(t + "chosen_node_99999.jsonl"); }) == t + "chosen_node_99999.jsonl: step 0 chosen[0].node names node 99999, which does not exist");
  const std::string s = kDir + "safetensors/shape_wraps_to_zero.safetensors";
  CHECK(error_of([&] { safetensors_read(s); }) ==
        s + ": tensor \"w\": shape [549755813888,33554432] x F32 needs more bytes than the file's 0 bytes of data");
  const std::string p = kDir + "tokenizer/";
  CHECK(error_of([&] { BpeTokenizer::load(p + "vocab_id_2e9.json"); }) == p + "vocab_id_2e9.json: model.vocab[\"big\"] must be an id in [0, 2^24), got 2000000000");
  CHECK(error_of([&] { BpeTokenizer::load(p + "vocab_id_int32_max.json"); }) == p + "vocab_id_int32_max.json: model.vocab[\"big\"] must be an id in [0, 2^24), got 2147483647");
}

TEST_CASE("findings of the 30-minute runs: a GGUF tensor whose byte count wraps to 0 is refused at parse", "[fuzz]") {
  // 2^31 x 2^31 F32 values: 2^64 bytes, which wrapped to 0 and passed every size
  // check; dequantising it then asked for 2^62 floats (length_error, exit 3).
  const std::string g = kDir + "gguf/found_byte_count_wraps_to_zero.gguf";
  CHECK(error_of([&] { GgufFile::read(g); }) ==
        g + ": tensor \"token_embd.weight\": 4611686018427387904 values of F32 make the byte count overflow");
}

TEST_CASE("findings: integers are range-checked for their type, never truncated", "[fuzz]") {
  const std::string p = kDir + "tokenizer/added_id_2p32_plus_97.json";
  CHECK(error_of([&] { BpeTokenizer::load(p); }) == p + ": added_tokens[0].id must be in [0, 2^24), got 4294967393");
  const std::string c = kDir + "llama_config/eos_2p32_plus_2.json";
  CHECK(error_of([&] { llama_config_load(c); }) == c + ": eos_token_id must be in [0, 95] (vocab_size - 1), got 4294967298");
  const std::string t = kDir + "trace/added_id_2p32_plus_1.jsonl";
  CHECK(error_of([&] { trace_open(t); }) == t + ":2: added[4]: field id must be in [0, 2147483647], got 4294967297");
}

TEST_CASE("findings: two tokens with one id are refused", "[fuzz]") {
  const std::string p = kDir + "tokenizer/";
  // Both files hold "tokenizer.json\0text" (the fuzz target's input): the reader sees the JSON part.
  auto load = [&](const std::string& name) {
    const std::string bytes = file_read_all(p + name);
    BpeTokenizer::parse(json_parse_text(bytes.substr(0, bytes.find('\0')), p + name), p + name);
  };
  CHECK(error_of([&] { load("duplicate_vocab_id.json"); }) == p + "duplicate_vocab_id.json: model.vocab gives id 97 to both \"a\" and \"b\"");
  CHECK(error_of([&] { load("added_takes_vocab_id.json"); }) == p + "added_takes_vocab_id.json: added_tokens[0].id is 97 but tokenizers gives \"zz\" the id 267");
}

#ifdef TRIESCOPE_WITH_TORCH
TEST_CASE("findings: a random transformer's declared size is bounded before its weights are allocated", "[fuzz]") {
  cli::register_backends();
  json sample = json_load_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/transformer_tiny.json");
  sample["model"]["random_init"] = {{"vocab_size", 4194304}, {"hidden_size", 65536}, {"intermediate_size", 8},
                                    {"num_hidden_layers", 1}, {"num_attention_heads", 1}};
  CHECK(error_of([&] { sample_parse(sample, "big.json"); }) ==
        "big.json: model.random_init declares 566937452544 weights, more than a random model may hold (268435456); use a "
        "checkpoint (path) for a model that size");
}
#endif

TEST_CASE("a trace cut off mid-line opens up to its last whole record, with a warning", "[fuzz]") {
  const std::string t = kDir + "trace/truncated_mid_line.jsonl";
  CHECK(error_of([&] { trace_read(t); }) ==
        t + ":4:51: malformed JSON: [json.exception.parse_error.101] parse error at line 1, column 51: syntax error while "
            "parsing array - unexpected end of input; expected ']'");
  std::string warning;
  const auto records = trace_read(t, &warning);
  CHECK(records.size() == 3);
  CHECK(warning == t + ":4: the file ends inside a record (a writer that stopped mid-line?); read the 3 whole records before it");
  TraceReplay r(records, t);
  CHECK_NOTHROW(r.at(r.last_step()));
}

// `triescope run` killed by a real signal mid-write: the trace's temporary
// (out.jsonl.triescope-tmp.<pid>.<n>.<random>) is removed and no trace is left.
TEST_CASE("run stopped by SIGINT or SIGTERM removes its temporary file", "[fuzz][cli]") {
  const int sig = GENERATE(SIGINT, SIGTERM);
  CAPTURE(sig);
  const fs::path dir = fs::temp_directory_path() / ("triescope-signal-" + std::to_string(::getpid()) + "-" + std::to_string(sig));
  fs::create_directories(dir);
  // synthetic_long, made to decode for minutes.
  json sample = json_load_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/synthetic_long.json");
  sample["beam"]["max_new_tokens"] = 1 << 20;
  sample["model"]["eos_rate"] = 0.0;
  const fs::path sample_path = dir / "endless.json", out = dir / "out.jsonl";
  file_write_atomic(sample_path.string(), sample.dump());
  const std::string exe = std::string(TRIESCOPE_BINARY_DIR) + "/app/triescope";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::execl(exe.c_str(), exe.c_str(), "run", sample_path.c_str(), "--quiet", "--out", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string prefix = out.filename().string() + kTempMarker + std::to_string(pid) + ".";
  auto temp = [&] {
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind(prefix, 0) == 0) return e.path();
    return fs::path();
  };
  // Wait until the run is writing (its temporary holds records), then signal it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  fs::path tmp;
  while (!(!(tmp = temp()).empty() && fs::file_size(tmp) > 100000) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const bool writing = !tmp.empty() && fs::exists(tmp);
  ::kill(pid, sig);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(writing);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == sig);
  CHECK_FALSE(fs::exists(tmp));
  CHECK_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

// Issue 27: safetensors offsets must tile the data section exactly, as the
// reference Rust library checks; 9ae4cdc read all three of these (an overlap
// changed logits by 0.110 against a largest logit of 0.113).
TEST_CASE("safetensors data_offsets that overlap, leave a gap or trailing bytes are refused, named", "[fuzz][safetensors]") {
  const fs::path dir = fs::temp_directory_path() / ("triescope-tiling-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto file = [&](const std::string& name, const json& header, size_t data_bytes) {
    const std::string h = header.dump();
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
    bytes += h + std::string(data_bytes, '\0');
    const std::string p = (dir / name).string();
    file_write_atomic(p, bytes);
    return p;
  };
  auto f32 = [](int64_t n, uint64_t b) { return json{{"dtype", "F32"}, {"shape", {n}}, {"data_offsets", {b, b + 4 * n}}}; };
  const std::string overlap = file("overlap.safetensors", {{"a", f32(2, 0)}, {"b", f32(2, 4)}}, 12);
  CHECK(error_of([&] { safetensors_read(overlap); }) ==
        overlap + ": tensor \"b\": data_offsets [4, 12] overlap tensor \"a\", which ends at 8 (tensors' data must tile the data section)");
  const std::string gap = file("gap.safetensors", {{"a", f32(2, 0)}, {"b", f32(2, 12)}}, 20);
  CHECK(error_of([&] { safetensors_read(gap); }) ==
        gap + ": data bytes [8, 12) belong to no tensor (a gap before tensor \"b\"; tensors' data must tile the data section)");
  const std::string trailing = file("trailing.safetensors", {{"a", f32(2, 0)}}, 12);
  CHECK(error_of([&] { safetensors_read(trailing); }) ==
        trailing + ": the data section holds 12 bytes, the tensors' data_offsets end at 8: 4 trailing bytes");
  const std::string tiled = file("tiled.safetensors", {{"a", f32(2, 0)}, {"b", f32(0, 8)}, {"c", f32(1, 8)}}, 12);
  CHECK(safetensors_read(tiled).size() == 3);
  fs::remove_all(dir);
}
