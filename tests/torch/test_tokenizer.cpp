// Byte-level BPE: a small tokenizer.json built here (GPT-2 byte alphabet,
// a few merges, special tokens); encode/decode round trips and exact ids.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/model/torch/bpe_tokenizer.h"
#include "core/trace/trace.h"
#include "tests/torch/torch_test_util.h"

using namespace triescope::test;

using namespace triescope;
using json = nlohmann::json;


TEST_CASE("GPT-2 pre-tokenizer split", "[model]") {
  using V = std::vector<std::string>;
  CHECK(BpeTokenizer::gpt2_split("Hello world's  test") == V{"Hello", " world", "'s", " ", " test"});
  CHECK(BpeTokenizer::gpt2_split("a, b!? 123x\n\nend  ") == V{"a", ",", " b", "!?", " 123", "x", "\n", "\n", "end", "  "});
  CHECK(BpeTokenizer::gpt2_split("they're we'll") == V{"they", "'re", " we", "'ll"});
  CHECK(BpeTokenizer::gpt2_split("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac") == V{"caf\xc3\xa9", " \xe6\x97\xa5\xe6\x9c\xac"});
}

TEST_CASE("byte-level BPE encode and decode", "[model]") {
  const BpeTokenizer t = BpeTokenizer::parse(small_tokenizer(), "test tokenizer.json");
  const auto id = [&](const std::string& s) { return *t.token_id(s); };
  const std::string G = byte_char(' ');
  SECTION("merges apply by rank") {
    CHECK(t.encode(" the world") == std::vector<int32_t>{id(G + "the"), id(G + "world")});
    CHECK(t.encode("there") == std::vector<int32_t>{'t', id("he"), 'r', 'e'});  // "he" (rank 1) before "er" (rank 3)
    CHECK(t.encode("caf\xc3\xa9") == std::vector<int32_t>{'c', 'a', 'f', id(byte_char(0xc3) + byte_char(0xa9))});
  }
  SECTION("round trips") {
    const std::string text = GENERATE(std::string("Hello, world! It's 12 the end.\n\n  spaces  "),
                                      std::string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e "
                                                  "\xf0\x9f\x99\x82 \xce\x95\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac"),
                                      std::string("\t tabs\r\nand \x01 control bytes \x7f"), std::string(""));
    CAPTURE(text);
    const auto ids = t.encode(text);
    CHECK(t.decode(ids) == text);
    for (int32_t i : ids) CHECK(i < 300);  // no special token appears by accident
  }
  SECTION("special tokens match verbatim and decode to their text") {
    const std::string text = "a<|endoftext|> the<|im_start|><|endoftext|>";
    const auto ids = t.encode(text);
    CHECK(ids == std::vector<int32_t>{'a', 300, id(G + "the"), 301, 300});
    CHECK(t.decode(ids) == text);
    CHECK(t.token_display(300) == "<|endoftext|>");
    CHECK(t.token_display(id(G + "the")) == " the");
    CHECK(t.token_display(0xc3) == byte_char(0xc3));  // a lone UTF-8 lead byte shows its byte-level form
  }
  SECTION("individual digits") {
    const BpeTokenizer d = BpeTokenizer::parse(small_tokenizer(true), "digits tokenizer.json");
    CHECK(t.encode("x12") == std::vector<int32_t>{'x', id("12")});
    CHECK(d.encode("x12") == std::vector<int32_t>{'x', '1', '2'});
    CHECK(d.decode(d.encode("room 1234 of 56")) == "room 1234 of 56");
  }
  SECTION("ignore_merges: a pre-token found whole in the vocabulary is one token") {
    json j = small_tokenizer();
    j["model"]["vocab"]["xyz"] = 299;
    CHECK(BpeTokenizer::parse(j, "a.json").encode("xyz") == std::vector<int32_t>{'x', 'y', 'z'});
    j["model"]["ignore_merges"] = true;
    const BpeTokenizer im = BpeTokenizer::parse(j, "b.json");
    CHECK(im.encode("xyz xy") == std::vector<int32_t>{299, id(G), 'x', 'y'});
  }
  CHECK_THROWS_WITH(t.decode({400}), Catch::Contains("outside"));
}

TEST_CASE("tokenizer.json errors are named", "[model]") {
  json j = small_tokenizer();
  j["model"]["byte_fallback"] = true;
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("tok.json") && Catch::Contains("byte_fallback"));
  j = small_tokenizer();
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("Metaspace"));
  j = small_tokenizer();
  j["model"]["vocab"].erase(byte_char('a'));
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("byte 97"));
  j = small_tokenizer();  // a byte outside printable ASCII may lack a token (SmolLM's 0x04): only encoding it fails
  j["model"]["vocab"].erase(byte_char(4));
  const BpeTokenizer no4 = BpeTokenizer::parse(j, "tok.json");
  CHECK(no4.decode(no4.encode("the world")) == "the world");
  CHECK_THROWS_WITH(no4.encode(std::string("a\x04")), Catch::Contains("is not in the vocabulary"));
  j = small_tokenizer();
  j["model"]["merges"].push_back(42);
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("model.merges[11]"));
  // Merges in the newer [a, b] form read the same.
  j = small_tokenizer();
  for (auto& m : j["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    const auto sp = s.find(' ');
    m = json::array({s.substr(0, sp), s.substr(sp + 1)});
  }
  const BpeTokenizer a = BpeTokenizer::parse(j, "pairs.json"), b = BpeTokenizer::parse(small_tokenizer(), "strings.json");
  CHECK(a.encode(" the world 12") == b.encode(" the world 12"));
}
