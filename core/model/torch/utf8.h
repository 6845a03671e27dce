// UTF-8 as the Hugging Face tokenizers library (Rust) sees it: text must be
// well-formed (no surrogates, overlong forms or code points past U+10FFFF),
// and bytes that are not become U+FFFD per maximal invalid subpart, as Rust's
// String::from_utf8_lossy and Python's errors="replace" do.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace triescope {

// Length of the well-formed UTF-8 sequence at s[i] (its code point in *cp),
// or 0 when the bytes there are not one.
size_t utf8_next(std::string_view s, size_t i, uint32_t* cp);

// The code points of s and, for each, its byte offset, plus s.size() at the
// end ([n + 1]). Throws Error naming `what` and the byte offset of the first
// ill-formed sequence.
void utf8_decode(std::string_view s, std::vector<uint32_t>& cps, std::vector<size_t>& offsets, const char* what);

void utf8_append(std::string& out, uint32_t cp);
bool utf8_valid(std::string_view s);
// s with every maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view s);

}  // namespace triescope
