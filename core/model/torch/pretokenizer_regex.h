// The pre-tokenizer regexes of byte-level BPE tokenizer.json files, each
// implemented exactly as a hand-written scanner over code points (Oniguruma's
// leftmost-first alternation, greedy quantifiers and backtracking worked out
// per pattern), since std::regex has no \p{L}. A Split pattern that is not one
// of these is refused by the tokenizer with a named error.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triescope {

enum class SplitRegex {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  // (GPT-2; what the ByteLevel pre-tokenizer uses when use_regex is true)
  gpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  // (Llama 3)
  llama3,
  // as llama3 with \p{N} for \p{N}{1,3} (Qwen2, Qwen3)
  qwen2,
};

// The regex source text, as tokenizer.json writes it.
const std::string& split_regex_pattern(SplitRegex r);
const char* split_regex_name(SplitRegex r);
// The SplitRegex whose source is exactly `pattern`, if any.
std::optional<SplitRegex> split_regex_find(const std::string& pattern);

// End (exclusive) of the match that starts at code point i of cps[0, n): every
// code point starts a match of these patterns, so the matches tile the text.
size_t split_regex_match(SplitRegex r, const uint32_t* cps, size_t n, size_t i);

// The matches of r over UTF-8 text, in order (throws Error on invalid UTF-8).
std::vector<std::string> split_regex_apply(SplitRegex r, std::string_view text);

}  // namespace triescope
