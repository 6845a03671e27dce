#include "core/common/sha256.h"
#include "core/constraint/constraint_set.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "core/common/error.h"
#include "core/common/text_excerpt.h"
#include "core/common/file_io.h"

namespace triescope {

namespace {

int32_t bits_for(int32_t vocab) { return std::max(1, static_cast<int32_t>(std::bit_width(static_cast<uint32_t>(vocab - 1)))); }

// Sorts rows lexicographically and drops duplicates. When L tokens fit into
// 128 bits the rows are packed into one integer key (one compare each).
void sort_unique(ConstraintSet& c) {
  const int64_t n = c.size();
  const int32_t L = c.length;
  const size_t Ls = static_cast<size_t>(L);
  std::vector<int32_t> out;
  out.reserve(c.tokens.size());
  const int32_t bits = bits_for(c.vocab_size);
  if (static_cast<int64_t>(bits) * L <= 128) {
    __extension__ typedef unsigned __int128 u128;
    std::vector<u128> keys(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      u128 k = 0;
      const int32_t* r = c.item(i);
      for (int32_t j = 0; j < L; ++j) k = (k << bits) | static_cast<u128>(static_cast<uint32_t>(r[j]));
      keys[static_cast<size_t>(i)] = k;
    }
    c.input_was_sorted = std::is_sorted(keys.begin(), keys.end());
    if (!c.input_was_sorted) std::sort(keys.begin(), keys.end());
    const auto last = std::unique(keys.begin(), keys.end());
    c.duplicates_removed = static_cast<int64_t>(keys.end() - last);
    keys.erase(last, keys.end());
    out.resize(keys.size() * Ls);
    const u128 m = (u128{1} << bits) - 1;
    for (size_t i = 0; i < keys.size(); ++i) {
      u128 k = keys[i];
      for (int32_t j = L - 1; j >= 0; --j, k >>= bits) out[i * Ls + static_cast<size_t>(j)] = static_cast<int32_t>(k & m);
    }
  } else {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto less = [&](int64_t a, int64_t b) { return std::lexicographical_compare(c.item(a), c.item(a) + L, c.item(b), c.item(b) + L); };
    c.input_was_sorted = std::is_sorted(idx.begin(), idx.end(), less);
    if (!c.input_was_sorted) std::sort(idx.begin(), idx.end(), less);
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i && std::equal(c.item(idx[i]), c.item(idx[i]) + L, c.item(idx[i - 1]))) {
        ++c.duplicates_removed;
        continue;
      }
      out.insert(out.end(), c.item(idx[i]), c.item(idx[i]) + L);
    }
  }
  c.tokens = std::move(out);
}

}  // namespace

bool ConstraintSet::contains(const std::vector<int32_t>& id) const {
  if (static_cast<int32_t>(id.size()) != length) return false;
  int64_t lo = 0, hi = size();
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (std::lexicographical_compare(item(mid), item(mid) + length, id.begin(), id.end())) lo = mid + 1;
    else hi = mid;
  }
  return lo < size() && std::equal(id.begin(), id.end(), item(lo));
}

static ConstraintSet parse_text_checked(const std::string& text, int32_t vocab_size, const std::string& origin);

ConstraintSet constraint_set_from_rows(std::vector<int32_t> rows, int32_t length, int32_t vocab_size,
                                       const std::string& origin, const std::string& what) {
  TS_CHECK(vocab_size >= 1, origin << ": vocabulary size must be >= 1, got " << vocab_size);
  TS_CHECK(length >= 1, origin << ": item length must be >= 1, got " << length);
  TS_CHECK(!rows.empty(), origin << ": empty constraint set (no items)");
  TS_CHECK(rows.size() % static_cast<size_t>(length) == 0, origin << ": " << rows.size() << " tokens is not a whole number of items of length " << length);
  for (size_t k = 0; k < rows.size(); ++k) {
    const int32_t t = rows[k];
    TS_CHECK(t >= 0 && t < vocab_size, origin << ": " << what << " " << k / static_cast<size_t>(length) << ", token "
                                              << k % static_cast<size_t>(length) << " = " << t << " outside the vocabulary [0, "
                                              << vocab_size << ")");
  }
  ConstraintSet c;
  c.vocab_size = vocab_size;
  c.length = length;
  c.tokens = std::move(rows);
  c.origin = origin;
  sort_unique(c);
  return c;
}

ConstraintSet constraint_set_parse_text(const std::string& text, int32_t vocab_size, const std::string& origin) {
  return reader_boundary(origin, [&] { return parse_text_checked(text, vocab_size, origin); });
}

static ConstraintSet parse_text_checked(const std::string& text, int32_t vocab_size, const std::string& origin) {
  std::vector<int32_t> rows;
  int32_t length = -1;
  int64_t first_line = 0;
  std::istringstream in(text);
  std::string line;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    int32_t count = 0;
    size_t pos = first;
    while (pos < line.size()) {
      const auto end = line.find_first_of(" \t", pos);
      const std::string tok = line.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      long long v = 0;
      size_t used = 0;
      try {
        v = std::stoll(tok, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      TS_CHECK(used == tok.size() && !tok.empty(), origin << ":" << lineno << ": token " << count << " \"" << text_excerpt(tok) << "\" is not an integer");
      TS_CHECK(v >= 0 && v < vocab_size, origin << ":" << lineno << ": token " << count << " = " << v
                                                << " outside the vocabulary [0, " << vocab_size << ")");
      TS_CHECK(count < kConstraintMaxLength, origin << ":" << lineno << ": more than " << kConstraintMaxLength << " tokens in one id");
      rows.push_back(static_cast<int32_t>(v));
      ++count;
      pos = line.find_first_not_of(" \t", end == std::string::npos ? line.size() : end);
      if (pos == std::string::npos) break;
    }
    if (length < 0) {
      length = count;
      first_line = lineno;
    }
    TS_CHECK(count == length, origin << ":" << lineno << ": ragged id: " << count << " tokens, but line " << first_line
                                     << " has " << length);
  }
  TS_CHECK(length > 0, origin << ": empty constraint set (no ids in the file)");
  return constraint_set_from_rows(std::move(rows), length, vocab_size, origin, "line-item");
}

ConstraintSet constraint_set_read_text(const std::string& path, int32_t vocab_size) {
  const std::string bytes = file_read_all(path);
  ConstraintSet c = constraint_set_parse_text(bytes, vocab_size, path);
  c.sha256 = sha256_hex(bytes);
  return c;
}

namespace {

// Returns the value text of 'key' in a numpy header dict, or "" if absent.
std::string npy_field(const std::string& header, const std::string& key) {
  const std::string k = "'" + key + "'";
  const auto p = header.find(k);
  if (p == std::string::npos) return "";
  auto q = header.find(':', p + k.size());
  if (q == std::string::npos) return "";
  ++q;
  while (q < header.size() && header[q] == ' ') ++q;
  if (q >= header.size()) return "";
  if (header[q] == '\'') {
    const auto e = header.find('\'', q + 1);
    return e == std::string::npos ? "" : header.substr(q, e - q + 1);
  }
  if (header[q] == '(') {
    const auto e = header.find(')', q);
    return e == std::string::npos ? "" : header.substr(q, e - q + 1);
  }
  const auto e = header.find_first_of(",}", q);
  return header.substr(q, e == std::string::npos ? std::string::npos : e - q);
}

ConstraintSet parse_npy_checked(const std::string& b, int32_t vocab_size, const std::string& origin);

}  // namespace

ConstraintSet constraint_set_parse_npy(const std::string& b, int32_t vocab_size, const std::string& origin) {
  return reader_boundary(origin, [&] { return parse_npy_checked(b, vocab_size, origin); });
}

namespace {
ConstraintSet parse_npy_checked(const std::string& b, int32_t vocab_size, const std::string& origin) {
  TS_CHECK(b.size() >= 10 && b.compare(0, 6, "\x93NUMPY") == 0, origin << ": not a .npy file (missing \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(b[6]);
  TS_CHECK(major >= 1 && major <= 3, origin << ": unsupported .npy format version " << major << "." << static_cast<int>(static_cast<unsigned char>(b[7])));
  size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(b[8]) | (static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8);
    hstart = 10;
  } else {
    TS_CHECK(b.size() >= 12, origin << ": truncated .npy header");
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(b[8 + static_cast<size_t>(i)])) << (8 * i);
    hstart = 12;
  }
  TS_CHECK(hstart + hlen <= b.size(), origin << ": truncated .npy header (header length " << hlen << ", file " << b.size() << " bytes)");
  const std::string header = b.substr(hstart, hlen);
  const std::string descr = npy_field(header, "descr"), order = npy_field(header, "fortran_order"), shape = npy_field(header, "shape");
  TS_CHECK(!descr.empty(), origin << ": .npy header has no 'descr' field: " << text_excerpt(header, 80));
  TS_CHECK(!order.empty(), origin << ": .npy header has no 'fortran_order' field: " << text_excerpt(header, 80));
  TS_CHECK(!shape.empty(), origin << ": .npy header has no 'shape' field: " << text_excerpt(header, 80));
  // descr: '<i4' etc. '|' means byte order does not apply (1-byte types).
  TS_CHECK(descr.size() == 5, origin << ": .npy dtype " << text_excerpt(descr) << " is not an integer type (need <i1/<i2/<i4/<i8/<u1/<u2/<u4/<u8)");
  const char endian = descr[1], kind = descr[2];
  const int width = descr[3] - '0';
  TS_CHECK(kind == 'i' || kind == 'u', origin << ": .npy dtype " << text_excerpt(descr) << " is not an integer type (need <i1/<i2/<i4/<i8/<u1/<u2/<u4/<u8)");
  TS_CHECK(width == 1 || width == 2 || width == 4 || width == 8, origin << ": .npy dtype " << text_excerpt(descr) << " has an unsupported width");
  TS_CHECK(endian == '<' || endian == '|' || (endian == '=' && width == 1),
           origin << ": .npy dtype " << text_excerpt(descr) << " is not little-endian");
  TS_CHECK(order == "False" || order == "True", origin << ": .npy fortran_order must be True or False, got " << text_excerpt(order));
  const bool fortran = order == "True";
  // shape: "(N, L)"
  std::vector<int64_t> dims;
  {
    std::string s = shape.substr(1, shape.size() - 2);
    std::istringstream is(s);
    std::string part;
    while (std::getline(is, part, ',')) {
      const auto f = part.find_first_not_of(' ');
      if (f == std::string::npos) continue;
      long long v = -1;
      size_t used = 0;
      try {
        v = std::stoll(part.substr(f), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      TS_CHECK(used > 0 && v >= 0, origin << ": .npy shape " << text_excerpt(shape) << " is malformed");
      dims.push_back(v);
    }
  }
  TS_CHECK(dims.size() == 2, origin << ": .npy shape " << text_excerpt(shape) << " must be 2-D (num_items, L), got " << dims.size() << "-D");
  const int64_t n = dims[0], L = dims[1];
  TS_CHECK(n > 0, origin << ": empty constraint set (.npy shape " << text_excerpt(shape) << ")");
  TS_CHECK(L >= 1 && L <= kConstraintMaxLength,
           origin << ": .npy item length " << L << " (shape " << text_excerpt(shape) << ") must be in [1, " << kConstraintMaxLength << "]");
  const size_t data_start = hstart + hlen;
  const size_t have = b.size() - data_start;
  // n is compared with what the data holds before n * L * width is formed: it wraps for n near 2^62.
  const size_t row_bytes = static_cast<size_t>(L) * static_cast<size_t>(width);
  TS_CHECK(static_cast<uint64_t>(n) <= have / row_bytes && static_cast<size_t>(n) * row_bytes == have,
           origin << ": .npy data holds " << have << " bytes, shape " << text_excerpt(shape) << " of " << text_excerpt(descr) << " needs "
                  << (static_cast<uint64_t>(n) <= SIZE_MAX / row_bytes ? std::to_string(static_cast<size_t>(n) * row_bytes)
                                                                         : std::string("2^64 or more")));
  std::vector<int32_t> rows(static_cast<size_t>(n * L));
  const unsigned char* d = reinterpret_cast<const unsigned char*>(b.data()) + data_start;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < L; ++c) {
      const size_t src = static_cast<size_t>(fortran ? c * n + r : r * L + c) * static_cast<size_t>(width);
      uint64_t u = 0;
      for (int k = 0; k < width; ++k) u |= static_cast<uint64_t>(d[src + static_cast<size_t>(k)]) << (8 * k);
      int64_t v = static_cast<int64_t>(u);
      if (kind == 'i' && width < 8 && (u >> (8 * width - 1)) & 1u) v = static_cast<int64_t>(u | (~uint64_t{0} << (8 * width)));
      TS_CHECK(v >= 0 && v < vocab_size, origin << ": row " << r << ", column " << c << " = " << v << " outside the vocabulary [0, "
                                                << vocab_size << ")");
      rows[static_cast<size_t>(r * L + c)] = static_cast<int32_t>(v);
    }
  return constraint_set_from_rows(std::move(rows), static_cast<int32_t>(L), vocab_size, origin, "row");
}
}  // namespace

ConstraintSet constraint_set_read_npy(const std::string& path, int32_t vocab_size) {
  const std::string bytes = file_read_all(path);
  ConstraintSet c = constraint_set_parse_npy(bytes, vocab_size, path);
  c.sha256 = sha256_hex(bytes);
  return c;
}

ConstraintSet constraint_set_read(const std::string& path, const std::string& format, int32_t vocab_size) {
  std::string f = format;
  if (f == "auto") f = (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0) ? "npy" : "text";
  if (f == "text") return constraint_set_read_text(path, vocab_size);
  if (f == "npy") return constraint_set_read_npy(path, vocab_size);
  TS_FAIL(path << ": constraint set format must be text, npy or auto, got \"" << format << "\"");
}

void constraint_set_write_text(const ConstraintSet& c, const std::string& path) { file_write_atomic(path, constraint_set_text(c)); }

void constraint_set_write_npy(const ConstraintSet& c, const std::string& path) { file_write_atomic(path, constraint_set_npy(c)); }

std::string constraint_set_text(const ConstraintSet& c) {
  std::ostringstream os;
  os << "# " << c.size() << " ids, L = " << c.length << ", |V| = " << c.vocab_size << "\n";
  for (int64_t i = 0; i < c.size(); ++i) {
    for (int32_t j = 0; j < c.length; ++j) os << (j ? " " : "") << c.item(i)[j];
    os << "\n";
  }
  return os.str();
}

std::string constraint_set_npy(const ConstraintSet& c) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" + std::to_string(c.size()) + ", " +
                       std::to_string(c.length) + "), }";
  // Pad so that magic(6) + version(2) + len(2) + header + '\n' is a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + '\x01' + '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  for (int32_t t : c.tokens)
    for (int k = 0; k < 4; ++k) out += static_cast<char>((static_cast<uint32_t>(t) >> (8 * k)) & 0xff);
  return out;
}

ConstraintSet constraint_set_random(int64_t num_items, int32_t length, int32_t vocab_size, uint64_t seed) {
  TS_CHECK(num_items >= 1, "random constraint set: num_items must be >= 1, got " << num_items);
  TS_CHECK(length >= 1 && vocab_size >= 1, "random constraint set: length and vocab_size must be >= 1");
  double space = 1.0;
  for (int32_t i = 0; i < length; ++i) space *= vocab_size;
  TS_CHECK(static_cast<double>(num_items) <= space, "random constraint set: " << num_items << " ids do not fit in " << vocab_size << "^" << length);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, vocab_size - 1);
  ConstraintSet c;
  c.vocab_size = vocab_size;
  c.length = length;
  c.origin = "<random |C|=" + std::to_string(num_items) + " L=" + std::to_string(length) + " |V|=" + std::to_string(vocab_size) +
             " seed=" + std::to_string(seed) + ">";
  while (c.size() < num_items) {
    const int64_t missing = num_items - c.size();
    c.tokens.reserve(static_cast<size_t>(num_items * length));
    for (int64_t i = 0; i < missing * length; ++i) c.tokens.push_back(tok(rng));
    sort_unique(c);
  }
  c.duplicates_removed = 0;
  c.input_was_sorted = true;
  return c;
}

}  // namespace triescope
