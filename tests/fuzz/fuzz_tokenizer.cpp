// Hugging Face tokenizer.json (byte-level BPE, core/model/torch/bpe_tokenizer.h)
// and its encode/decode on fuzzed text. Input: the tokenizer.json, then a NUL
// byte and the text (without one, every printable ASCII character and a few
// multi-byte ones). Properties: the ids encode gives are tokens, so decode,
// decode_bytes and token_display take them. (decode(encode(t)) == t is not a
// property: tokenizers' normalizers, lstrip/rstrip and unk_token change text.)
#include <cstring>

#include "core/config/json_reader.h"
#include "core/model/torch/bpe_tokenizer.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = fuzz::as_string(data, size);
  const size_t nul = in.find('\0');
  std::string text;
  if (nul == std::string::npos) {
    for (int b = 32; b < 127; ++b) text += static_cast<char>(b);
    text += "\t\n caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82 Hello, world! It's 12 o'clock.";
  } else {
    text = in.substr(nul + 1);
  }
  std::optional<BpeTokenizer> t;
  if (!fuzz::accepted([&] { t.emplace(BpeTokenizer::parse(json_parse_text(in.substr(0, nul), "tokenizer.json"), "tokenizer.json")); }))
    return 0;
  std::vector<int32_t> ids;
  if (!fuzz::accepted([&] { ids = t->encode(text); })) return 0;
  FUZZ_CHECK(fuzz::accepted([&] { t->decode(ids); }), "decode refused the ids encode produced");
  FUZZ_CHECK(fuzz::accepted([&] { t->decode_bytes(ids); }), "decode_bytes refused the ids encode produced");
  for (int32_t id : ids) FUZZ_CHECK(fuzz::accepted([&] { t->token_display(id); }), "token_display refused an id encode produced");
  return 0;
}
