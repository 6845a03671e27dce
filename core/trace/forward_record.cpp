#include "core/trace/forward_record.h"

#include <array>
#include <bit>
#include <climits>
#include <cstring>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

using nlohmann::json;

namespace {

// Into `v`, reusing its capacity.
void int_array_into(const json& j, const char* key, const std::string& where, std::vector<int32_t>& v) {
  v.clear();
  if (!j.contains(key)) return;
  TS_CHECK(j[key].is_array(), where << ": field " << key << " must be an array");
  for (size_t i = 0; i < j[key].size(); ++i) {
    const auto x = json_int_in(j[key][i], INT32_MIN, INT32_MAX);
    TS_CHECK(x, where << ": field " << key << "[" << i << "] must be a 32-bit integer, got " << json_brief(j[key][i]));
    v.push_back(static_cast<int32_t>(*x));
  }
}

// trace_mask_parse's result for a well-formed mask, decoded with a table
// straight into the rows' little-endian bytes: a 4096 x 4096 mask is
// 8 MB of hex per step, and the per-character decode dominated the cold step
// (docs/benchmarks-gui.md). Anything it does not accept goes to
// trace_mask_parse, the one place that words the error.
void mask_parse_fast(const json& j, const std::string& where, BitMask& m) {
  // Two hex characters (read as one little-endian uint16) -> their byte,
  // or 0x100 when either is not a hex digit: one lookup per mask byte.
  static const std::vector<uint16_t> pair = [] {
    std::array<int, 256> nib{};
    nib.fill(-1);
    for (int c = 0; c < 10; ++c) nib[static_cast<size_t>('0' + c)] = c;
    for (int c = 0; c < 6; ++c) nib[static_cast<size_t>('a' + c)] = nib[static_cast<size_t>('A' + c)] = 10 + c;
    std::vector<uint16_t> t(65536);
    for (size_t i = 0; i < t.size(); ++i) {
      const int hi = nib[i & 0xff], lo = nib[i >> 8];  // first character = low byte
      t[i] = hi < 0 || lo < 0 ? uint16_t{0x100} : static_cast<uint16_t>(hi * 16 + lo);
    }
    return t;
  }();
  // `m`'s words are reused (reset keeps their capacity): a fresh 2 MB per
  // step faulted in its pages every time (docs/benchmarks-gui.md).
  auto slow = [&] { m = trace_mask_parse(j, where); };
  if constexpr (std::endian::native != std::endian::little) return slow();
  if (!(j.is_object() && j.contains("cols") && j["cols"].is_number_integer() && j.contains("rows") && j["rows"].is_array()))
    return slow();
  const int64_t cols = j["cols"].is_number_unsigned() && j["cols"].get<uint64_t>() > INT64_MAX ? -1 : j["cols"].get<int64_t>();
  if (cols < 0 || cols > kTraceMaxSlots || j["rows"].size() > static_cast<size_t>(kTraceMaxSlots)) return slow();
  const json& rows = j["rows"];
  const size_t nbytes = static_cast<size_t>((cols + 7) / 8);
  // Row lengths before the allocation: the rows, not cols, hold the bytes.
  for (const json& row : rows)
    if (!row.is_string() || row.get_ref<const std::string&>().size() != nbytes * 2) return slow();
  m.reset(static_cast<int32_t>(rows.size()), static_cast<int32_t>(cols));
  for (int32_t r = 0; r < m.rows; ++r) {
    const json& row = rows[static_cast<size_t>(r)];
    const std::string& hex = row.get_ref<const std::string&>();
    auto* out = reinterpret_cast<unsigned char*>(m.row(r));  // words are zero; bytes past nbytes stay zero
    uint16_t bad = 0;
    const char* in = hex.data();
    for (size_t k = 0; k < nbytes; ++k) {
      uint16_t two;
      std::memcpy(&two, in + 2 * k, 2);
      const uint16_t b = pair[two];
      bad |= b;
      out[k] = static_cast<unsigned char>(b);
    }
    // Bits past `cols` must be zero (what BitMask::set_row_hex checks).
    if ((bad & 0x100) != 0 || (cols % 64 != 0 && m.words_per_row > 0 && (m.row(r)[m.words_per_row - 1] >> (cols % 64)) != 0))
      return slow();
  }
}

}  // namespace

void forward_view_parse(const json& f, const std::string& where, ForwardView& out) {
  TS_CHECK(f.is_object(), where << " must be an object, got " << json_brief(f));
  int_array_into(f, kForwardQueries, where, out.queries);
  int_array_into(f, kForwardPositions, where, out.positions);
  int_array_into(f, kForwardSlots, where, out.slots);
  TS_CHECK(f.contains(kForwardMask), where << " needs a mask");
  mask_parse_fast(f[kForwardMask], where + "." + kForwardMask, out.mask);
  TS_CHECK(out.positions.size() == static_cast<size_t>(out.mask.rows) && out.slots.size() == out.positions.size(),
           where << ": positions/slots/mask rows disagree in length");
}

json ForwardView::to_json() const {
  json j = {{kForwardPositions, positions}, {kForwardSlots, slots}, {kForwardMask, trace_mask(mask)}};
  if (!queries.empty()) j[kForwardQueries] = queries;
  return j;
}

size_t forward_record_positions(const json& f) {
  if (!f.is_object()) return 0;
  const auto pos = f.find(kForwardPositions);
  return pos != f.end() && pos->is_array() ? pos->size() : 0;
}

}  // namespace triescope
