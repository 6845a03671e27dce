// A constraint set C (STATIC Sec. 4.1): fixed-length item ids (Semantic IDs,
// L tokens over a vocabulary of |V|), kept sorted and unique so that the
// breadth-first trie, the CSR matrix and PPV's sorted flat array all read the
// same order. Readers validate everything and name the file, line or row.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace triescope {

// The longest item (L tokens) a reader accepts.
inline constexpr int32_t kConstraintMaxLength = 1024;

struct ConstraintSet {
  int32_t vocab_size = 0;        // |V|: every token lies in [0, vocab_size)
  int32_t length = 0;            // L
  std::vector<int32_t> tokens;   // [num_items x L] row-major, sorted lexicographically, unique
  int64_t duplicates_removed = 0;
  bool input_was_sorted = true;  // false when the reader had to sort
  std::string origin;            // file (or "<random ...>") the set came from
  std::string sha256;            // of the file's bytes (constraint_set_read_*); empty for a set made in memory

  int64_t size() const { return length ? static_cast<int64_t>(tokens.size()) / length : 0; }
  const int32_t* item(int64_t i) const { return tokens.data() + static_cast<size_t>(i) * static_cast<size_t>(length); }
  // Exact membership by binary search over the sorted items.
  bool contains(const std::vector<int32_t>& id) const;
};

// Builds a set from raw rows [n x length]: checks every token against
// [0, vocab_size), rejects an empty set, sorts and removes duplicates.
// `row_name(i)` in messages is "<origin>: <what> i".
ConstraintSet constraint_set_from_rows(std::vector<int32_t> rows, int32_t length, int32_t vocab_size,
                                       const std::string& origin, const std::string& what = "row");

// Text: one id per line, tokens separated by spaces or tabs; blank lines and
// lines starting with '#' are skipped. Line numbers in errors are 1-based.
ConstraintSet constraint_set_parse_text(const std::string& text, int32_t vocab_size, const std::string& origin);
ConstraintSet constraint_set_read_text(const std::string& path, int32_t vocab_size);

// NumPy .npy (format 1.0, 2.0, 3.0): a 2-D array [num_items x L] of
// little-endian integers (i1/i2/i4/i8/u1/u2/u4/u8), C or Fortran order.
ConstraintSet constraint_set_parse_npy(const std::string& bytes, int32_t vocab_size, const std::string& origin);
ConstraintSet constraint_set_read_npy(const std::string& path, int32_t vocab_size);

// Reads by format name: "text" or "npy"; "auto" picks by the .npy suffix.
ConstraintSet constraint_set_read(const std::string& path, const std::string& format, int32_t vocab_size);

// Writers (temp file + rename). npy is written as '<i4' [n x L].
void constraint_set_write_text(const ConstraintSet& c, const std::string& path);
void constraint_set_write_npy(const ConstraintSet& c, const std::string& path);
// The bytes those writers write.
std::string constraint_set_text(const ConstraintSet& c);
std::string constraint_set_npy(const ConstraintSet& c);

// |C| ids drawn uniformly at random from V^L, as in the paper's scaling
// experiments (Sec. 5.3); duplicates are redrawn so the set has exactly
// `num_items` ids. Deterministic in `seed`.
ConstraintSet constraint_set_random(int64_t num_items, int32_t length, int32_t vocab_size, uint64_t seed);

}  // namespace triescope
