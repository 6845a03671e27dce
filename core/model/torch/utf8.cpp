#include "core/model/torch/utf8.h"

#include "core/common/error.h"

namespace triescope {

namespace {
// How many bytes at s[i] begin a well-formed sequence (Unicode 14, table 3-7);
// the sequence is complete when that equals its expected length.
size_t utf8_prefix(std::string_view s, size_t i, size_t* expected, uint32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *expected = 1;
    *cp = b0;
    return 1;
  }
  uint8_t lo = 0x80, hi = 0xbf;  // range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    *expected = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    *expected = 3;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;  // no surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    *expected = 4;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
  } else {
    *expected = 0;
    return 0;
  }
  uint32_t v = b0 & (*expected == 2 ? 0x1fu : *expected == 3 ? 0x0fu : 0x07u);
  size_t k = 1;
  for (; k < *expected && i + k < s.size(); ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) break;
    v = (v << 6) | (b & 0x3fu);
  }
  *cp = v;
  return k;
}
}  // namespace

size_t utf8_next(std::string_view s, size_t i, uint32_t* cp) {
  size_t expected = 0;
  const size_t k = utf8_prefix(s, i, &expected, cp);
  return k == expected ? k : 0;
}

void utf8_decode(std::string_view s, std::vector<uint32_t>& cps, std::vector<size_t>& offsets, const char* what) {
  cps.clear();
  offsets.clear();
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_next(s, i, &cp);
    TS_CHECK(n > 0, what << ": text is not valid UTF-8 at byte " << i << " (0x" << std::hex
                         << static_cast<int>(static_cast<unsigned char>(s[i])) << std::dec << ")");
    cps.push_back(cp);
    offsets.push_back(i);
    i += n;
  }
  offsets.push_back(s.size());
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_next(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t expected = 0;
    uint32_t cp = 0;
    const size_t k = utf8_prefix(s, i, &expected, &cp);
    if (k > 0 && k == expected) {
      out.append(s.substr(i, k));
      i += k;
    } else {
      out += "\xef\xbf\xbd";  // U+FFFD for the maximal subpart (at least one byte)
      i += k > 0 ? k : 1;
    }
  }
  return out;
}

}  // namespace triescope
