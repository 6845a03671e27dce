// Bit-packed boolean matrix, row-major, least-significant bit first
// (docs/conventions.md, FlashInfer mask.cuh): bit c of row r lives in
// words[r * words_per_row + c / 64] at bit c % 64.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace triescope {

struct BitMask {
  int32_t rows = 0;
  int32_t cols = 0;
  int32_t words_per_row = 0;
  std::vector<uint64_t> words;  // [rows * words_per_row]

  BitMask() = default;
  BitMask(int32_t r, int32_t c) { reset(r, c); }
  void reset(int32_t r, int32_t c);
  static int32_t words_for(int32_t cols) { return static_cast<int32_t>((int64_t{cols} + 63) / 64); }

  bool test(int32_t r, int32_t c) const {
    return (words[static_cast<size_t>(r) * words_per_row + static_cast<size_t>(c >> 6)] >> (c & 63)) & 1u;
  }
  void set(int32_t r, int32_t c) {
    words[static_cast<size_t>(r) * words_per_row + static_cast<size_t>(c >> 6)] |= uint64_t{1} << (c & 63);
  }
  void flip(int32_t r, int32_t c) {
    words[static_cast<size_t>(r) * words_per_row + static_cast<size_t>(c >> 6)] ^= uint64_t{1} << (c & 63);
  }
  const uint64_t* row(int32_t r) const { return words.data() + static_cast<size_t>(r) * words_per_row; }
  uint64_t* row(int32_t r) { return words.data() + static_cast<size_t>(r) * words_per_row; }
  int32_t row_popcount(int32_t r) const;

  // Row as lowercase hex of its little-endian bytes, trimmed to ceil(cols/8)
  // bytes: byte k is chars [2k, 2k+2). The trace format stores rows this way.
  std::string row_hex(int32_t r) const;
  // Parses a row written by row_hex; returns false on a malformed string.
  bool set_row_hex(int32_t r, const std::string& hex);

  bool operator==(const BitMask& o) const;
};

}  // namespace triescope
