// Unicode normalization (tokenizer.json normalizers NFC/NFD/NFKC/NFKD): one
// named case per rule; every expected string is Python's
// unicodedata.normalize(form, text) (Unicode 14). tests/peer/test_tokenizer_parity.py
// compares all code points with unicodedata and with tokenizers.
#include <catch2/catch.hpp>

#include "core/common/error.h"
#include "core/model/torch/unicode_normalize.h"

using namespace triescope;

TEST_CASE("NFC composes a starter with the marks after it", "[model][normalize]") {
  CHECK(unicode_normalize("e\xcc\x81", NormalForm::nfc) == "\xc3\xa9");                       // e + U+0301 -> é
  CHECK(unicode_normalize("a\xcc\x88\xcc\x81", NormalForm::nfc) == "\xc3\xa4\xcc\x81");       // ä, then U+0301 stays
  CHECK(unicode_normalize("e\xcc\x81\xcc\x81", NormalForm::nfc) == "\xc3\xa9\xcc\x81");       // a mark of the same class is blocked
  CHECK(unicode_normalize("\xe2\x84\xab", NormalForm::nfc) == "\xc3\x85");                    // ANGSTROM SIGN is a singleton
}

TEST_CASE("canonical ordering sorts marks by combining class before composing", "[model][normalize]") {
  CHECK(unicode_normalize("a\xcc\xa3\xcc\x82", NormalForm::nfc) == "\xe1\xba\xad");  // U+0323 (220) before U+0302 (230)
  CHECK(unicode_normalize("a\xcc\x82\xcc\xa3", NormalForm::nfc) == "\xe1\xba\xad");
  CHECK(unicode_normalize("q\xcc\x87\xcc\xa3", NormalForm::nfc) == "q\xcc\xa3\xcc\x87");
}

TEST_CASE("composition exclusions stay decomposed", "[model][normalize]") {
  CHECK(unicode_normalize("\xe0\xa5\x98", NormalForm::nfc) == "\xe0\xa4\x95\xe0\xa4\xbc");  // U+0958 -> U+0915 U+093C
}

TEST_CASE("Hangul syllables by arithmetic", "[model][normalize]") {
  CHECK(unicode_normalize("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", NormalForm::nfc) == "\xea\xb0\x81");  // L V T -> U+AC01
  CHECK(unicode_normalize("\xea\xb0\x81", NormalForm::nfd) == "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8");
}

TEST_CASE("NFD and NFKD decompose fully; NFK* also take compatibility mappings", "[model][normalize]") {
  CHECK(unicode_normalize("\xc3\xa9", NormalForm::nfd) == "e\xcc\x81");
  CHECK(unicode_normalize("\xe1\xb9\xa9", NormalForm::nfd) == "s\xcc\xa3\xcc\x87");
  CHECK(unicode_normalize("\xef\xac\x81", NormalForm::nfkc) == "fi");           // U+FB01 ligature
  CHECK(unicode_normalize("\xe2\x91\xa0", NormalForm::nfkc) == "1");            // CIRCLED DIGIT ONE
  CHECK(unicode_normalize("\xef\xbc\xa8", NormalForm::nfkc) == "H");            // fullwidth H
  CHECK(unicode_normalize("\xc2\xbd", NormalForm::nfkc) == "1\xe2\x81\x84" "2");  // ½ -> 1 U+2044 2
  CHECK(unicode_normalize("\xe1\xba\x9b\xcc\xa3", NormalForm::nfkc) == "\xe1\xb9\xa9");
  CHECK(unicode_normalize("\xe1\xba\x9b\xcc\xa3", NormalForm::nfkd) == "s\xcc\xa3\xcc\x87");
  CHECK(unicode_normalize("\xef\xac\x81", NormalForm::nfc) == "\xef\xac\x81");  // NFC keeps compatibility characters
}

TEST_CASE("normalizing ill-formed UTF-8 is a named error", "[model][normalize]") {
  CHECK(unicode_normalize("", NormalForm::nfc).empty());
  CHECK_THROWS_WITH(unicode_normalize("a\xff", NormalForm::nfc), Catch::Contains("not valid UTF-8 at byte 1"));
}
