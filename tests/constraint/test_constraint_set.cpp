#include <functional>
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/common/error.h"
#include "core/constraint/constraint_set.h"

using namespace triescope;
using Catch::Matchers::Contains;

namespace {
// A hand-made .npy: header dict text + raw little-endian data.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  const size_t pre = major == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  if (major == 1) {
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
  } else {
    for (int k = 0; k < 4; ++k) out += static_cast<char>((h.size() >> (8 * k)) & 0xff);
  }
  return out + h + data;
}
std::string le(int64_t v, int width) {
  std::string s;
  for (int k = 0; k < width; ++k) s += static_cast<char>((static_cast<uint64_t>(v) >> (8 * k)) & 0xff);
  return s;
}
std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("triescope_constraint_" + std::to_string(::getpid()) + "_" + name)).string();
}
std::string error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("constraint set: text is sorted, deduplicated and counted", "[constraint]") {
  const auto c = constraint_set_parse_text("# Figure 1\n3 1 3\n1 2 1\n\n3 1 2\n1 2 1\n", 4, "fig1.txt");
  CHECK(c.size() == 3);
  CHECK(c.length == 3);
  CHECK(c.duplicates_removed == 1);
  CHECK_FALSE(c.input_was_sorted);
  CHECK(c.tokens == std::vector<int32_t>{1, 2, 1, 3, 1, 2, 3, 1, 3});
  CHECK(c.contains({3, 1, 2}));
  CHECK_FALSE(c.contains({3, 1, 1}));
  CHECK_FALSE(c.contains({3, 1}));
}

TEST_CASE("constraint set: every bad text input is named with its line", "[constraint]") {
  CHECK_THROWS_WITH(constraint_set_parse_text("1 2 3\n4 5\n", 8, "ids.txt"), Contains("ids.txt:2: ragged id: 2 tokens, but line 1 has 3"));
  CHECK_THROWS_WITH(constraint_set_parse_text("1 2 3\n# c\n4 5 8\n", 8, "ids.txt"), Contains("ids.txt:3: token 2 = 8 outside the vocabulary [0, 8)"));
  CHECK_THROWS_WITH(constraint_set_parse_text("1 -2 3\n", 8, "ids.txt"), Contains("ids.txt:1: token 1 = -2 outside the vocabulary"));
  CHECK_THROWS_WITH(constraint_set_parse_text("1 x 3\n", 8, "ids.txt"), Contains("ids.txt:1: token 1 \"x\" is not an integer"));
  CHECK_THROWS_WITH(constraint_set_parse_text("1 2.5 3\n", 8, "ids.txt"), Contains("ids.txt:1: token 1 \"2.5\" is not an integer"));
  CHECK_THROWS_WITH(constraint_set_parse_text("# nothing\n\n", 8, "ids.txt"), Contains("ids.txt: empty constraint set"));
  CHECK_THROWS_WITH(constraint_set_read_text("/nonexistent/ids.txt", 8), Contains("/nonexistent/ids.txt: cannot open"));
}

TEST_CASE("constraint set: errors quote at most a short, escaped excerpt of the file", "[constraint]") {
  // A 1 MB token was echoed whole; raw bytes (a terminal escape) reached stderr.
  const std::string big(1 << 20, 'A');
  const std::string e1 = error_text([&] { (void)constraint_set_parse_text("1 " + big + " 3\n", 8, "ids.txt"); });
  CHECK(e1.find("ids.txt:1: token 1 \"AAAA") != std::string::npos);
  CHECK(e1.find("... (1048576 bytes)") != std::string::npos);
  CHECK(e1.size() < 200);
  const std::string e2 = error_text([&] { (void)constraint_set_parse_text("1 \x1b[31mred 3\n", 8, "ids.txt"); });
  CHECK(e2.find("\\x1b[31mred") != std::string::npos);
  CHECK(e2.find('\x1b') == std::string::npos);
  // A 4 MB .npy header without a field: named, not printed whole.
  const std::string header = "{'fortran_order': False, 'shape': (2, 3), 'pad': '" + std::string(4 << 20, 'p') + "'}";
  const std::string e3 = error_text([&] { (void)constraint_set_parse_npy(npy_bytes(header, "", 2), 8, "a.npy"); });
  CHECK(e3.find("a.npy: .npy header has no 'descr' field") != std::string::npos);
  CHECK(e3.size() < 300);
}

TEST_CASE("constraint set: npy of every integer width and order reads the same ids", "[constraint]") {
  const int width = GENERATE(1, 2, 4, 8);
  const bool fortran = GENERATE(false, true);
  const int major = GENERATE(1, 2);
  CAPTURE(width, fortran, major);
  // rows (2, 3): [[3,1,2],[1,2,1]]
  const int64_t rows[2][3] = {{3, 1, 2}, {1, 2, 1}};
  std::string data;
  for (int a = 0; a < (fortran ? 3 : 2); ++a)
    for (int b = 0; b < (fortran ? 2 : 3); ++b) data += le(fortran ? rows[b][a] : rows[a][b], width);
  const std::string dict = "{'descr': '<i" + std::to_string(width) + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': (2, 3), }";
  const auto c = constraint_set_parse_npy(npy_bytes(dict, data, major), 4, "ids.npy");
  CHECK(c.tokens == std::vector<int32_t>{1, 2, 1, 3, 1, 2});
}

TEST_CASE("constraint set: every bad npy input is named", "[constraint]") {
  const std::string d6 = le(1, 4) + le(2, 4) + le(3, 4) + le(1, 4) + le(2, 4) + le(3, 4);
  CHECK_THROWS_WITH(constraint_set_parse_npy("not numpy at all", 8, "a.npy"), Contains("a.npy: not a .npy file"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", d6), 8, "a.npy"),
                    Contains("a.npy: .npy dtype '<f4' is not an integer type"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", d6), 8, "a.npy"),
                    Contains("is not an integer type"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (2, 3), }", d6), 8, "a.npy"),
                    Contains("a.npy: .npy dtype '>i4' is not little-endian"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", d6), 8, "a.npy"),
                    Contains("a.npy: .npy shape (6,) must be 2-D (num_items, L), got 1-D"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 3), }", d6), 8, "a.npy"),
                    Contains("must be 2-D (num_items, L), got 3-D"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (3, 3), }", d6), 8, "a.npy"),
                    Contains("a.npy: .npy data holds 24 bytes, shape (3, 3) of '<i4' needs 36"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (0, 3), }", ""), 8, "a.npy"),
                    Contains("a.npy: empty constraint set"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, }", d6), 8, "a.npy"),
                    Contains("a.npy: .npy header has no 'shape' field"));
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", d6), 3, "a.npy"),
                    Contains("a.npy: row 0, column 2 = 3 outside the vocabulary [0, 3)"));
  const std::string neg = le(1, 4) + le(2, 4) + le(3, 4) + le(1, 4) + le(-5, 4) + le(3, 4);
  CHECK_THROWS_WITH(constraint_set_parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", neg), 8, "a.npy"),
                    Contains("a.npy: row 1, column 1 = -5 outside the vocabulary"));
  std::string trunc = npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", d6).substr(0, 30);
  CHECK_THROWS_WITH(constraint_set_parse_npy(trunc, 8, "a.npy"), Contains("a.npy: truncated .npy header"));
}

TEST_CASE("constraint set: text and npy writers round-trip; random sets are exact in size", "[constraint]") {
  const uint64_t seed = GENERATE(1u, 2u, 3u);
  CAPTURE(seed);
  const auto c = constraint_set_random(500, 4, 16, seed);
  REQUIRE(c.size() == 500);
  const std::string t = tmp_path("rt.txt"), n = tmp_path("rt.npy");
  constraint_set_write_text(c, t);
  constraint_set_write_npy(c, n);
  CHECK(constraint_set_read(t, "auto", 16).tokens == c.tokens);
  CHECK(constraint_set_read(n, "auto", 16).tokens == c.tokens);
  CHECK_THROWS_WITH(constraint_set_read(n, "csv", 16), Contains("format must be text, npy or auto"));
  std::remove(t.c_str());
  std::remove(n.c_str());
}
