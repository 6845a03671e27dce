#include "core/model/torch/pretokenizer_regex.h"

#include <algorithm>

#include "core/common/enum_names.h"
#include "core/model/torch/unicode_class.h"
#include "core/model/torch/utf8.h"

namespace triescope {

namespace {
const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr EnumName<SplitRegex> kSplitRegexNames[] = {{SplitRegex::gpt2, "gpt2"}, {SplitRegex::llama3, "llama3"}, {SplitRegex::qwen2, "qwen2"}};

using Cls = UnicodeClass;

struct Text {
  const uint32_t* c;
  size_t n;
  Cls cls(size_t i) const { return unicode_class(c[i]); }
  bool is(size_t i, Cls k) const { return i < n && cls(i) == k; }
  bool newline(size_t i) const { return i < n && (c[i] == '\r' || c[i] == '\n'); }
  size_t run(size_t i, Cls k) const {
    while (i < n && cls(i) == k) ++i;
    return i;
  }
};

// 's|'t|'re|'ve|'m|'ll|'d, with `fold` mapping a code point to the letter it
// matches (exact ASCII for GPT-2, case-insensitive for (?i:...)); 0 when none.
template <class Fold>
size_t contraction(const Text& t, size_t i, Fold fold) {
  if (t.c[i] != '\'' || i + 1 >= t.n) return 0;
  const char a = fold(t.c[i + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if (i + 2 >= t.n) return 0;
  const char b = fold(t.c[i + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

// \s+(?!\S)|\s+ at a space: the greedy run gives back its last code point when
// a non-space follows, unless that would leave nothing.
size_t space_run(const Text& t, size_t i) {
  const size_t j = t.run(i, Cls::space);
  return (j == t.n || j - i == 1) ? j : j - 1;
}

size_t match_gpt2(const Text& t, size_t i) {
  auto exact = [](uint32_t c) { return c < 0x80 ? static_cast<char>(c) : '\0'; };
  if (const size_t e = contraction(t, i, exact)) return e;
  // " ?X+" for X in \p{L}, \p{N}, [^\s\p{L}\p{N}]: the space joins a following non-space.
  const size_t s = (t.c[i] == ' ' && i + 1 < t.n && t.cls(i + 1) != Cls::space) ? i + 1 : i;
  const Cls k = t.cls(s);
  if (k != Cls::space) return t.run(s, k);
  return space_run(t, i);
}

size_t match_llama3(const Text& t, size_t i, size_t max_digits) {
  if (const size_t e = contraction(t, i, unicode_ascii_fold)) return e;
  const Cls k = t.cls(i);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (k == Cls::letter) return t.run(i, Cls::letter);
  if (k != Cls::number && !t.newline(i) && t.is(i + 1, Cls::letter)) return t.run(i + 1, Cls::letter);
  // \p{N}{1,3} (or \p{N})
  if (k == Cls::number) return std::min(t.run(i, Cls::number), i + max_digits);
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  const size_t s = (t.c[i] == ' ' && t.is(i + 1, Cls::other)) ? i + 1 : i;
  if (t.cls(s) == Cls::other) {
    size_t e = t.run(s, Cls::other);
    while (t.newline(e)) ++e;
    return e;
  }
  // Here c[i] is a space. \s*[\r\n]+: the greedy \s* backs off to the last
  // \r or \n of the space run, which [\r\n]+ then takes.
  const size_t j = t.run(i, Cls::space);
  for (size_t e = j; e > i; --e)
    if (t.newline(e - 1)) return e;
  return space_run(t, i);
}
}  // namespace

const std::string& split_regex_pattern(SplitRegex r) {
  switch (r) {
    case SplitRegex::gpt2: return kGpt2;
    case SplitRegex::llama3: return kLlama3;
    case SplitRegex::qwen2: return kQwen2;
  }
  return kGpt2;
}

const char* split_regex_name(SplitRegex r) { return enum_name(kSplitRegexNames, r); }

std::optional<SplitRegex> split_regex_find(const std::string& pattern) {
  for (const EnumName<SplitRegex>& r : kSplitRegexNames)
    if (split_regex_pattern(r.value) == pattern) return r.value;
  return std::nullopt;
}

size_t split_regex_match(SplitRegex r, const uint32_t* cps, size_t n, size_t i) {
  const Text t{cps, n};
  switch (r) {
    case SplitRegex::gpt2: return match_gpt2(t, i);
    case SplitRegex::llama3: return match_llama3(t, i, 3);
    case SplitRegex::qwen2: return match_llama3(t, i, 1);
  }
  return i + 1;
}

std::vector<std::string> split_regex_apply(SplitRegex r, std::string_view text) {
  std::vector<uint32_t> cps;
  std::vector<size_t> at;
  utf8_decode(text, cps, at, "pre-tokenizer");
  std::vector<std::string> out;
  for (size_t i = 0; i < cps.size();) {
    const size_t e = split_regex_match(r, cps.data(), cps.size(), i);
    out.emplace_back(text.substr(at[i], at[e] - at[i]));
    i = e;
  }
  return out;
}

}  // namespace triescope
