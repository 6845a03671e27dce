#include "core/common/text_excerpt.h"

#include <cstdio>

namespace triescope {

std::string text_excerpt(std::string_view bytes, size_t max_bytes) {
  std::string out;
  const size_t n = bytes.size() < max_bytes ? bytes.size() : max_bytes;
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (n < bytes.size()) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

}  // namespace triescope
