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
    j["model"]["vocab"].erase("<|reserved_299|>");
    j["model"]["vocab"]["xyz"] = 299;
    CHECK(BpeTokenizer::parse(j, "a.json").encode("xyz") == std::vector<int32_t>{'x', 'y', 'z'});
    j["model"]["ignore_merges"] = true;
    const BpeTokenizer im = BpeTokenizer::parse(j, "b.json");
    CHECK(im.encode("xyz xy") == std::vector<int32_t>{299, id(G), 'x', 'y'});
  }
  CHECK_THROWS_WITH(t.decode({400}), Catch::Contains("ids[0] = 400 is no token"));
  CHECK_THROWS_WITH(t.encode("ab\xff"), Catch::Contains("not valid UTF-8 at byte 2"));
}

TEST_CASE("tokenizer.json errors are named", "[model]") {
  json j = small_tokenizer();
  j["model"]["byte_fallback"] = true;
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("tok.json") && Catch::Contains("byte_fallback"));
  j = small_tokenizer();
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("Metaspace"));
  j = small_tokenizer();
  j["model"]["merges"].push_back(42);
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("model.merges[11]"));
  j = small_tokenizer();
  j["model"]["merges"].push_back("h x");  // "hx" is no token
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("model.merges[11]: \"hx\" is not in model.vocab"));
  j = small_tokenizer();
  j["model"]["type"] = "WordPiece";
  j["truncation"] = {{"max_length", 128}};  // the model kind is named first
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("tok.json: model.type \"WordPiece\" is not supported"));
  j = small_tokenizer();
  j["padding"] = {{"length", 8}};
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("tok.json: padding is set: not supported"));
  j = small_tokenizer();
  j["normalizer"] = {{"type", "Lowercase"}};
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("tok.json: normalizer type \"Lowercase\" is not supported"));
  j = small_tokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\w+"}}}, {"behavior", "Isolated"}, {"invert", false}};
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("pre_tokenizer.pattern.Regex is not one of"));
  j = small_tokenizer();
  j["decoder"] = nullptr;
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("tok.json: decoder null is not supported"));
  j = small_tokenizer();
  j["added_tokens"][0]["single_word"] = true;
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("added_tokens[0].single_word"));
  j = small_tokenizer();
  j["added_tokens"][1]["id"] = 305;
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("added_tokens[1].id is 305 but tokenizers gives"));
  j = small_tokenizer();
  j["model"]["vocab"]["again"] = 5;
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "tok.json"), Catch::Contains("gives id 5 to both"));
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

TEST_CASE("code points missing from the vocabulary: dropped, or unk_token (fused with fuse_unk), as tokenizers does", "[model]") {
  json j = small_tokenizer();
  j["model"]["vocab"].erase(byte_char(0));
  j["model"]["vocab"]["<unk>"] = 0;
  const std::string text = std::string("a\0\0b", 4);
  CHECK(BpeTokenizer::parse(j, "drop.json").encode(text) == std::vector<int32_t>{'a', 'b'});
  j["model"]["unk_token"] = "<unk>";
  CHECK(BpeTokenizer::parse(j, "unk.json").encode(text) == std::vector<int32_t>{'a', 0, 0, 'b'});
  j["model"]["fuse_unk"] = true;
  CHECK(BpeTokenizer::parse(j, "fuse.json").encode(text) == std::vector<int32_t>{'a', 0, 'b'});
  j["model"]["unk_token"] = "<nothing>";
  CHECK_THROWS_WITH(BpeTokenizer::parse(j, "bad.json"), Catch::Contains("model.unk_token \"<nothing>\" is not in model.vocab"));
}

TEST_CASE("added tokens: lstrip/rstrip take the spaces around them; decode skips special ones on request", "[model]") {
  json j = small_tokenizer();
  j["added_tokens"][0]["lstrip"] = true;
  j["added_tokens"][1]["rstrip"] = true;
  const BpeTokenizer t = BpeTokenizer::parse(j, "strip.json");
  const std::string G = byte_char(' ');
  CHECK(t.encode("a  <|endoftext|> b") == std::vector<int32_t>{'a', 300, *t.token_id(G), 'b'});
  CHECK(t.encode("a<|im_start|>  b") == std::vector<int32_t>{'a', 301, 'b'});
  CHECK(t.decode({'a', 300, 'b'}, true) == "ab");
  CHECK(t.decode({'a', 300, 'b'}) == "a<|endoftext|>b");
  CHECK(t.decode({0xe6, 0x97}) == "\xef\xbf\xbd");  // a cut character decodes to U+FFFD
  CHECK(t.decode_bytes({0xe6, 0x97}) == "\xe6\x97");
}

TEST_CASE("pre-tokenizer steps run in order: Split(Llama-3) then ByteLevel, prefix space per piece", "[model]") {
  json j = small_tokenizer();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", split_regex_pattern(SplitRegex::llama3)}}}, {"behavior", "Isolated"}, {"invert", false}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  const BpeTokenizer t = BpeTokenizer::parse(j, "llama3.json");
  CHECK(t.pretokenizer() == "Split(llama3)+ByteLevel");
  CHECK(t.encode("1234") == std::vector<int32_t>{*t.token_id("12"), '3', '4'});  // "123" | "4"
  j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true;
  const BpeTokenizer p = BpeTokenizer::parse(j, "prefix.json");
  const int32_t sp = *p.token_id(byte_char(' '));
  CHECK(p.encode("1234") == std::vector<int32_t>{sp, *t.token_id("12"), '3', sp, '4'});
}

TEST_CASE("a normalizer runs before the added tokens marked normalized are matched", "[model]") {
  json j = small_tokenizer();
  j["normalizer"] = {{"type", "NFKC"}};
  j["added_tokens"][1]["normalized"] = true;
  j["added_tokens"][1]["content"] = "<|im_st\xef\xac\x81|>";  // "<|im_stﬁ|>": NFKC makes it "<|im_stfi|>"
  const BpeTokenizer t = BpeTokenizer::parse(j, "nfkc.json");
  CHECK(t.normalizer() == "NFKC");
  CHECK(t.encode("\xef\xac\x81<|im_stfi|>") == std::vector<int32_t>{'f', 'i', 301});
  CHECK(t.encode("<|im_st\xef\xac\x81|>") == std::vector<int32_t>{301});
  CHECK(t.decode({301}) == "<|im_st\xef\xac\x81|>");  // decodes to the content as written
}

TEST_CASE("a pair made by a merge is merged before the other pairs of the current rank when it ranks lower", "[model]") {
  // tokenizers' queue: merges "ab a" (rank 0) then "a b" (rank 1) turn "abab"
  // into "aba" + "b"; merging every "a b" first would give "ab" + "ab".
  json j = small_tokenizer();
  j["model"]["vocab"].erase("<|reserved_298|>");
  j["model"]["vocab"].erase("<|reserved_299|>");
  j["model"]["vocab"]["ab"] = 298;
  j["model"]["vocab"]["aba"] = 299;
  j["model"]["merges"] = {"ab a", "a b"};
  CHECK(BpeTokenizer::parse(j, "order.json").encode("abab") == std::vector<int32_t>{299, 'b'});
}
