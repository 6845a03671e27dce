#include <catch2/catch.hpp>

#include "core/common/error.h"
#include "core/decode/run_sample.h"

using namespace triescope;

namespace {
json good_sample() {
  return json::parse(R"({
    "schema": "triescope.sample", "version": 1, "name": "t", "algorithm": "trie_beam_search",
    "model": {"type": "synthetic", "vocab_size": 32, "seed": 3},
    "prompt": [1, 2, 3],
    "beam": {"num_beams": 3, "max_new_tokens": 4, "gc_interval": 2}
  })");
}
std::string error_of(const json& j) {
  try {
    sample_parse(j, "x.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("samples: every bad field gets an error naming the file and the field", "[sample]") {
  REQUIRE(error_of(good_sample()) == "no error");
  struct Case {
    const char* pointer;
    json value;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"/beam/num_beams", 0, "x.json: beam.num_beams must be in [1, 4096], got 0"},
      {"/model/vocab_size", 0, "x.json: model.vocab_size must be in [2,"},
      {"/beam/gc_interval", -1, "x.json: beam.gc_interval must be in [0,"},
      {"/prompt/1", 32, "x.json: prompt[1] must be in [0, 31], got 32"},
      {"/prompt/0", -4, "x.json: prompt[0] must be in [0, 31], got -4"},
      {"/beam/num_beams", 17, "needs a vocabulary of at least 2 x num_beams"},
      {"/beam/early_stopping", "sometimes", "x.json: beam.early_stopping must be true, false or \"never\""},
      {"/beam/max_new_tokens", "ten", "x.json: beam.max_new_tokens must be an integer"},
      {"/model/type", "gpt", "x.json: model.type must be one of"},
      {"/schema", "other", "x.json: schema must be \"triescope.sample\""},
      {"/version", 2, "x.json: version is 2"},
      {"/algorithm", "magic", "x.json: algorithm must be"},
      {"/beam/surprise", 1, "x.json: unknown field beam.surprise"},
      {"/extra", true, "x.json: unknown field extra"},
      {"/model/eos_rate", 0.1, "model.eos_rate needs model.eos_token"},
      {"/beam/eos_token", 40, "x.json: beam.eos_token must be in [-1, 31], got 40"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.pointer, c.value.dump());
    json j = good_sample();
    j[json::json_pointer(c.pointer)] = c.value;
    CHECK_THAT(error_of(j), Catch::Contains(c.expect));
  }
  json missing = good_sample();
  missing.erase("beam");
  CHECK_THAT(error_of(missing), Catch::Contains("x.json: missing field beam"));
  json missing_nested = good_sample();
  missing_nested["beam"].erase("max_new_tokens");
  CHECK_THAT(error_of(missing_nested), Catch::Contains("x.json: missing field beam.max_new_tokens"));
  json wrong_word = good_sample();
  wrong_word.erase("prompt");
  wrong_word["prompt_text"] = {"hello"};
  CHECK_THAT(error_of(wrong_word), Catch::Contains("prompt_text needs a model with a vocabulary"));
}

TEST_CASE("samples: a field naming a method or a verification lists the names it takes", "[sample]") {
  struct Case {
    const char* algorithm;
    const char* section;
    const char* key;
    std::vector<const char*> names;  // every name the field takes, in the error's order
  };
  const std::vector<Case> cases = {
      {"multigen", "multigen", "method", {"copy", "structured", "hybrid"}},
      {"lookahead", "lookahead", "verify", {"trie", "independent", "greedy_only"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.algorithm);
    json j = good_sample();
    j.erase("beam");
    j["algorithm"] = c.algorithm;
    j[c.section] = {{"max_new_tokens", 3}};
    if (std::string(c.algorithm) == "multigen") j[c.section]["num_samples"] = 2;
    for (const char* name : c.names) {
      CAPTURE(name);
      j[c.section][c.key] = name;
      CHECK(error_of(j) == "no error");
    }
    j[c.section][c.key] = "sideways";
    const std::string expect = std::string("x.json: ") + c.section + "." + c.key + " must be " + c.names[0] + ", " + c.names[1] +
                               " or " + c.names[2] + ", got \"sideways\"";
    CHECK(error_of(j) == expect);
  }
}

TEST_CASE("samples: malformed JSON names the file, line and column", "[sample]") {
  try {
    json_parse_text("{\n  \"a\": 1,\n  oops\n}", "bad.json");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("bad.json:3:"));
  }
}

TEST_CASE("samples: scripted vocabulary mismatches are named", "[sample]") {
  json j = json::parse(R"({
    "schema": "triescope.sample", "version": 1, "name": "t", "algorithm": "trie_beam_search",
    "model": {"type": "scripted", "vocab": ["a", "b", "c", "d"],
              "table": [{"context": ["a", "zz"], "next": {"b": 1.0}}]},
    "prompt_text": ["a"],
    "beam": {"num_beams": 1, "max_new_tokens": 2}
  })");
  CHECK_THAT(error_of(j), Catch::Contains("x.json: model.table[0].context[1] = \"zz\" is not in the vocabulary"));
}

TEST_CASE("samples: every bundled sample loads", "[sample]") {
  for (const char* name : {"figure1_once_upon_a_time.json", "synthetic_long.json", "lookahead_repetitive.json", "multigen_figure1.json"}) {
    CAPTURE(name);
    CHECK_NOTHROW(sample_load(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/" + name));
  }
}
