#include "core/mask/bit_mask.h"

#include <bit>

namespace triescope {

void BitMask::reset(int32_t r, int32_t c) {
  rows = r;
  cols = c;
  words_per_row = words_for(c);
  words.assign(static_cast<size_t>(r) * static_cast<size_t>(words_per_row), 0);
}

int32_t BitMask::row_popcount(int32_t r) const {
  int32_t n = 0;
  const uint64_t* w = row(r);
  for (int32_t i = 0; i < words_per_row; ++i) n += std::popcount(w[i]);
  return n;
}

std::string BitMask::row_hex(int32_t r) const {
  static const char* digits = "0123456789abcdef";
  const int32_t nbytes = (cols + 7) / 8;
  std::string s(static_cast<size_t>(nbytes) * 2, '0');
  const uint64_t* w = row(r);
  for (int32_t k = 0; k < nbytes; ++k) {
    const unsigned byte = static_cast<unsigned>((w[k / 8] >> (8 * (k % 8))) & 0xffu);
    s[2 * static_cast<size_t>(k)] = digits[byte >> 4];
    s[2 * static_cast<size_t>(k) + 1] = digits[byte & 15];
  }
  return s;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool BitMask::set_row_hex(int32_t r, const std::string& hex) {
  const int32_t nbytes = (cols + 7) / 8;
  if (hex.size() != static_cast<size_t>(nbytes) * 2) return false;
  uint64_t* w = row(r);
  for (int32_t i = 0; i < words_per_row; ++i) w[i] = 0;
  for (int32_t k = 0; k < nbytes; ++k) {
    const int hi = hex_value(hex[2 * static_cast<size_t>(k)]);
    const int lo = hex_value(hex[2 * static_cast<size_t>(k) + 1]);
    if (hi < 0 || lo < 0) return false;
    w[k / 8] |= static_cast<uint64_t>(hi * 16 + lo) << (8 * (k % 8));
  }
  // Bits past `cols` must be zero: a row claiming a slot that does not exist is malformed.
  if (cols % 64 != 0 && words_per_row > 0 && (w[words_per_row - 1] >> (cols % 64)) != 0) return false;
  return true;
}

bool BitMask::operator==(const BitMask& o) const {
  return rows == o.rows && cols == o.cols && words == o.words;
}

}  // namespace triescope
