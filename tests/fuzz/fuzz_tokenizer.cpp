// Hugging Face tokenizer.json (byte-level BPE, core/model/torch/bpe_tokenizer.h)
// and its encode/decode on fuzzed text. Input: the tokenizer.json, then a NUL
// byte and the text (without one, a text holding every byte value).
// Property: decode(encode(t)) == t (bpe_tokenizer.h: decode inverts encode),
// up to the one space a ByteLevel add_prefix_space puts in front.
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
    for (int b = 0; b < 256; ++b) text += static_cast<char>(b);
    text += " Hello, world! It's 12 o'clock.";
  } else {
    text = in.substr(nul + 1);
  }
  std::optional<BpeTokenizer> t;
  if (!fuzz::accepted([&] { t.emplace(BpeTokenizer::parse(json_parse_text(in.substr(0, nul), "tokenizer.json"), "tokenizer.json")); }))
    return 0;
  std::vector<int32_t> ids;
  if (!fuzz::accepted([&] { ids = t->encode(text); })) return 0;
  std::string back;
  FUZZ_CHECK(fuzz::accepted([&] { back = t->decode(ids); }), "decode refused the ids encode produced");
  FUZZ_CHECK(back == text || back == " " + text, "decode(encode(text)) != text");
  for (int32_t id : ids) fuzz::accepted([&] { t->token_display(id); });
  return 0;
}
