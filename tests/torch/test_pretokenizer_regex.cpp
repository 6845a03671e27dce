// The pre-tokenizer regex scanners, one named case per alternative of each
// pattern. Every expected split here is what Hugging Face tokenizers 0.20.3
// (Oniguruma) gives for the same pattern and text:
//   Split(Regex(pattern), "isolated").pre_tokenize_str(text)
// tests/peer/test_tokenizer_parity.py checks the same scanners on a large corpus.
#include <catch2/catch.hpp>

#include "core/common/error.h"
#include "core/model/torch/pretokenizer_regex.h"
#include "core/model/torch/unicode_class.h"
#include "core/model/torch/utf8.h"

using namespace triescope;
using V = std::vector<std::string>;

namespace {
V gpt2(const std::string& s) { return split_regex_apply(SplitRegex::gpt2, s); }
V llama3(const std::string& s) { return split_regex_apply(SplitRegex::llama3, s); }
V qwen2(const std::string& s) { return split_regex_apply(SplitRegex::qwen2, s); }
}  // namespace

TEST_CASE("GPT-2 regex: 's|'t|'re|'ve|'m|'ll|'d are case-sensitive", "[model][pretokenizer]") {
  CHECK(gpt2("it's they're we've I'm you'll he'd don't") ==
        V{"it", "'s", " they", "'re", " we", "'ve", " I", "'m", " you", "'ll", " he", "'d", " don", "'t"});
  CHECK(gpt2("IT'S 'Re") == V{"IT", "'", "S", " '", "Re"});
  CHECK(gpt2("'\xc5\xbf") == V{"'", "\xc5\xbf"});  // U+017F LONG S is no 's' here
}

TEST_CASE("GPT-2 regex: ' ?\\p{L}+' takes one leading space", "[model][pretokenizer]") {
  CHECK(gpt2("Hello world") == V{"Hello", " world"});
  CHECK(gpt2("  hello") == V{" ", " hello"});
  CHECK(gpt2("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e") == V{"caf\xc3\xa9", " \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"});
  CHECK(gpt2("e\xcc\x81") == V{"e", "\xcc\x81"});  // a combining mark (Mn) is not \p{L}
}

TEST_CASE("GPT-2 regex: ' ?\\p{N}+' keeps a whole digit run", "[model][pretokenizer]") {
  CHECK(gpt2(" 12345") == V{" 12345"});
  CHECK(gpt2("\xd9\xa3\xd9\xa4 \xc2\xbd") == V{"\xd9\xa3\xd9\xa4", " \xc2\xbd"});  // Arabic-Indic digits, one half
}

TEST_CASE("GPT-2 regex: ' ?[^\\s\\p{L}\\p{N}]+'", "[model][pretokenizer]") {
  CHECK(gpt2("a !!!b") == V{"a", " !!!", "b"});
  CHECK(gpt2("!'s") == V{"!'", "s"});  // the run takes the apostrophe first
  CHECK(gpt2("\xf0\x9f\x98\x80\xf0\x9f\x98\x80x") == V{"\xf0\x9f\x98\x80\xf0\x9f\x98\x80", "x"});
}

TEST_CASE("GPT-2 regex: '\\s+(?!\\S)' leaves the last space to the next word, '\\s+' the rest", "[model][pretokenizer]") {
  CHECK(gpt2("a   b") == V{"a", "  ", " b"});
  CHECK(gpt2("a  ") == V{"a", "  "});
  CHECK(gpt2("a\tb") == V{"a", "\t", "b"});
  CHECK(gpt2("\t\tb") == V{"\t", "\t", "b"});
  CHECK(gpt2("x\n\n\n") == V{"x", "\n\n\n"});
  CHECK(gpt2("a\xc2\xa0" "b") == V{"a", "\xc2\xa0", "b"});  // U+00A0 is \s
}

TEST_CASE("Llama-3 regex: (?i:'s|'t|'re|'ve|'m|'ll|'d) ignores case, U+017F included", "[model][pretokenizer]") {
  CHECK(llama3("IT'S 'Re 'LL") == V{"IT", "'S", " '", "Re", " '", "LL"});
  CHECK(llama3("'\xc5\xbfx") == V{"'\xc5\xbf", "x"});
  CHECK(llama3("'sup") == V{"'s", "up"});
}

TEST_CASE("Llama-3 regex: '[^\\r\\n\\p{L}\\p{N}]?\\p{L}+' takes one leading non-newline non-letter", "[model][pretokenizer]") {
  CHECK(llama3("(hello") == V{"(hello"});
  CHECK(llama3("\thello") == V{"\thello"});
  CHECK(llama3(" hello") == V{" hello"});
  CHECK(llama3("'hello") == V{"'hello"});
  CHECK(llama3("\xc2\xa0word") == V{"\xc2\xa0word"});
  CHECK(llama3("\nhello") == V{"\n", "hello"});
  CHECK(llama3("1abc") == V{"1", "abc"});
  CHECK(llama3("((hello") == V{"((", "hello"});
}

TEST_CASE("Llama-3 regex: '\\p{N}{1,3}' cuts digit runs in threes, Qwen2's '\\p{N}' in ones", "[model][pretokenizer]") {
  CHECK(llama3("1234567") == V{"123", "456", "7"});
  CHECK(llama3(" 12") == V{" ", "12"});
  CHECK(qwen2("1234567") == V{"1", "2", "3", "4", "5", "6", "7"});
  CHECK(qwen2(" 12x") == V{" ", "1", "2", "x"});
}

TEST_CASE("Llama-3 regex: ' ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*' takes the newlines after punctuation", "[model][pretokenizer]") {
  CHECK(llama3(" ...\n\nx") == V{" ...\n\n", "x"});
  CHECK(llama3("!!\r\nx") == V{"!!\r\n", "x"});
}

TEST_CASE("Llama-3 regex: '\\s*[\\r\\n]+' ends at the last newline of a space run", "[model][pretokenizer]") {
  CHECK(llama3("  \n  x") == V{"  \n", " ", " x"});
  CHECK(llama3("x \n") == V{"x", " \n"});
  CHECK(llama3("a\r\n\r\n  b") == V{"a", "\r\n\r\n", " ", " b"});
}

TEST_CASE("Llama-3 regex: '\\s+(?!\\S)' and '\\s+'", "[model][pretokenizer]") {
  CHECK(llama3("a   b") == V{"a", "  ", " b"});
  CHECK(llama3("a  ") == V{"a", "  "});
  CHECK(llama3("\t\tb") == V{"\t", "\tb"});
}

TEST_CASE("known Split patterns are recognised by their exact source", "[model][pretokenizer]") {
  for (SplitRegex r : {SplitRegex::gpt2, SplitRegex::llama3, SplitRegex::qwen2}) CHECK(split_regex_find(split_regex_pattern(r)) == r);
  CHECK_FALSE(split_regex_find(split_regex_pattern(SplitRegex::llama3) + "|x").has_value());
}

TEST_CASE("the matches tile any text, and ill-formed UTF-8 is a named error", "[model][pretokenizer]") {
  std::string all;
  for (uint32_t cp = 0; cp < 0x3000; cp += 7) utf8_append(all, cp);
  for (SplitRegex r : {SplitRegex::gpt2, SplitRegex::llama3, SplitRegex::qwen2}) {
    std::string joined;
    for (const auto& p : split_regex_apply(r, all)) {
      CHECK(!p.empty());
      joined += p;
    }
    CHECK(joined == all);
  }
  CHECK_THROWS_WITH(gpt2("ab\xc3"), Catch::Contains("not valid UTF-8 at byte 2"));
  CHECK_THROWS_WITH(gpt2("\xed\xa0\x80"), Catch::Contains("byte 0"));  // a surrogate
}

TEST_CASE("Unicode classes (table generated from Unicode 14)", "[model][pretokenizer]") {
  CHECK(std::string(unicode_class_version()) == "14.0.0");
  CHECK(unicode_class('a') == UnicodeClass::letter);
  CHECK(unicode_class(0x65e5) == UnicodeClass::letter);    // 日
  CHECK(unicode_class(0x2167) == UnicodeClass::number);    // Roman numeral eight (Nl)
  CHECK(unicode_class(0x1c) == UnicodeClass::other);       // Python's isspace() says space; White_Space does not
  CHECK(unicode_class(0x3000) == UnicodeClass::space);
  CHECK(unicode_class(0x1f600) == UnicodeClass::other);    // emoji
  CHECK(unicode_class(0x10ffff) == UnicodeClass::other);
  CHECK(unicode_ascii_fold(0x17f) == 's');
  CHECK(unicode_ascii_fold('Q') == 'q');
  CHECK(unicode_ascii_fold(0xdf) == 0);  // sharp s folds to "ss", no single letter
}

TEST_CASE("lossy UTF-8 replaces each maximal invalid subpart once", "[model][pretokenizer]") {
  const std::string R = "\xef\xbf\xbd";
  CHECK(utf8_lossy("ok") == "ok");
  CHECK(utf8_lossy("a\xe6\x97" "b") == "a" + R + "b");   // a cut 3-byte sequence: one U+FFFD
  CHECK(utf8_lossy("\xe6\x97\xe6\x97\xa5") == R + "\xe6\x97\xa5");
  CHECK(utf8_lossy("\xc0\xaf") == R + R);                 // C0 never starts a sequence
  CHECK(utf8_lossy("\xed\xa0\x80") == R + R + R);         // a surrogate: ED then two lone continuations
  CHECK(utf8_lossy("\xf4\x90\x80\x80") == R + R + R + R);  // past U+10FFFF
}
