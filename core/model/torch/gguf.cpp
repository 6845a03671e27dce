#include "core/model/torch/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "core/common/error.h"
#include "core/common/file_io.h"

namespace triescope {

namespace {

constexpr int kMaxArrayDepth = 8;  // nested arrays: deep enough for any real file, bounded against a hostile one
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS

// Bytes a value of type t takes at least (a string: its 8-byte length; an array: its element type and count).
uint64_t min_value_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8: case GgufValueType::int8: case GgufValueType::boolean: return 1;
    case GgufValueType::uint16: case GgufValueType::int16: return 2;
    case GgufValueType::uint32: case GgufValueType::int32: case GgufValueType::float32: return 4;
    case GgufValueType::uint64: case GgufValueType::int64: case GgufValueType::float64: case GgufValueType::string: return 8;
    case GgufValueType::array: return 12;
  }
  return 1;
}

bool value_type_known(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::float64); }
bool is_float(GgufValueType t) { return t == GgufValueType::float32 || t == GgufValueType::float64; }
bool is_signed(GgufValueType t) {
  return t == GgufValueType::int8 || t == GgufValueType::int16 || t == GgufValueType::int32 || t == GgufValueType::int64;
}

// Little-endian reads from the file's bytes; every read is checked against
// what is left, and names the field it was reading.
class Cursor {
 public:
  Cursor(const std::string& bytes, const std::string& origin) : b_(bytes), origin_(origin) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return b_.size() - pos_; }
  void need(uint64_t n, const std::string& what) const {
    TS_CHECK(n <= left(), origin_ << ": truncated file: " << what << " needs " << n << " bytes at offset " << pos_
                                  << ", the file ends at " << b_.size());
  }
  uint64_t uint(int bytes, const std::string& what) {
    need(static_cast<uint64_t>(bytes), what);
    uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b_[pos_ + static_cast<uint64_t>(k)]);
    pos_ += static_cast<uint64_t>(bytes);
    return v;
  }
  std::string string(const std::string& what) {
    const uint64_t n = uint(8, what + " length");
    TS_CHECK(n <= left(), origin_ << ": " << what << ": string length " << n << " runs past the end of the file ("
                                  << left() << " bytes left at offset " << pos_ << ")");
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  const std::string& b_;
  const std::string& origin_;
  uint64_t pos_ = 0;
};

int64_t sign_extend(uint64_t v, int bytes) {
  const int shift = 64 - 8 * bytes;
  return static_cast<int64_t>(v << shift) >> shift;
}

GgufValue read_value(Cursor& c, GgufValueType t, const std::string& what, int depth, const std::string& origin) {
  GgufValue v;
  v.type = t;
  switch (t) {
    case GgufValueType::uint8: v.u = c.uint(1, what); break;
    case GgufValueType::uint16: v.u = c.uint(2, what); break;
    case GgufValueType::uint32: v.u = c.uint(4, what); break;
    case GgufValueType::uint64: v.u = c.uint(8, what); break;
    case GgufValueType::int8: v.i = sign_extend(c.uint(1, what), 1); break;
    case GgufValueType::int16: v.i = sign_extend(c.uint(2, what), 2); break;
    case GgufValueType::int32: v.i = sign_extend(c.uint(4, what), 4); break;
    case GgufValueType::int64: v.i = static_cast<int64_t>(c.uint(8, what)); break;
    case GgufValueType::float32: v.f = std::bit_cast<float>(static_cast<uint32_t>(c.uint(4, what))); break;
    case GgufValueType::float64: v.f = std::bit_cast<double>(c.uint(8, what)); break;
    case GgufValueType::boolean:
      v.u = c.uint(1, what);
      TS_CHECK(v.u <= 1, origin << ": " << what << ": a bool must be 0 or 1, got " << v.u);
      break;
    case GgufValueType::string: v.s = c.string(what); break;
    case GgufValueType::array: {
      TS_CHECK(depth < kMaxArrayDepth, origin << ": " << what << ": arrays nested deeper than " << kMaxArrayDepth);
      const auto et = static_cast<uint32_t>(c.uint(4, what + " element type"));
      TS_CHECK(value_type_known(et), origin << ": " << what << ": unknown array element type " << et << " (0..12)");
      v.elem = static_cast<GgufValueType>(et);
      const uint64_t n = c.uint(8, what + " count");
      const uint64_t min = min_value_bytes(v.elem);
      TS_CHECK(n <= c.left() / min, origin << ": " << what << ": array count " << n << " of " << gguf_value_type_name(v.elem)
                                           << " needs at least " << min << " bytes each, only " << c.left()
                                           << " bytes are left at offset " << c.pos());
      // n is bounded by the bytes left, so these reservations are at most 8x the file.
      if (v.elem == GgufValueType::string) v.strings.reserve(n);
      else if (is_float(v.elem)) v.floats.reserve(n);
      else if (is_signed(v.elem)) v.ints.reserve(n);
      else if (v.elem != GgufValueType::array) v.uints.reserve(n);
      for (uint64_t k = 0; k < n; ++k) {
        GgufValue x = read_value(c, v.elem, what + "[" + std::to_string(k) + "]", depth + 1, origin);
        if (v.elem == GgufValueType::string) v.strings.push_back(std::move(x.s));
        else if (v.elem == GgufValueType::array) v.arrays.push_back(std::move(x));
        else if (is_float(v.elem)) v.floats.push_back(x.f);
        else if (is_signed(v.elem)) v.ints.push_back(x.i);
        else v.uints.push_back(x.u);  // unsigned integers and bools
      }
      break;
    }
  }
  return v;
}

float half_bits(const uint8_t* p) { return half_to_float(static_cast<uint16_t>(p[0] | p[1] << 8)); }

}  // namespace

const char* gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8: return "uint8";
    case GgufValueType::int8: return "int8";
    case GgufValueType::uint16: return "uint16";
    case GgufValueType::int16: return "int16";
    case GgufValueType::uint32: return "uint32";
    case GgufValueType::int32: return "int32";
    case GgufValueType::float32: return "float32";
    case GgufValueType::boolean: return "bool";
    case GgufValueType::string: return "string";
    case GgufValueType::array: return "array";
    case GgufValueType::uint64: return "uint64";
    case GgufValueType::int64: return "int64";
    case GgufValueType::float64: return "float64";
  }
  return "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::uint8: case GgufValueType::int8: case GgufValueType::uint16: case GgufValueType::int16:
    case GgufValueType::uint32: case GgufValueType::int32: case GgufValueType::uint64: case GgufValueType::int64:
      return true;
    default:
      return false;
  }
}

size_t GgufValue::count() const {
  return uints.size() + ints.size() + floats.size() + strings.size() + arrays.size();
}

GgufValue GgufValue::element(size_t k) const {
  TS_CHECK(type == GgufValueType::array && k < count(), "GgufValue::element: " << k << " is not an element of this value");
  if (elem == GgufValueType::array) return arrays[k];
  GgufValue x;
  x.type = elem;
  if (elem == GgufValueType::string) x.s = strings[k];
  else if (is_float(elem)) x.f = floats[k];
  else if (is_signed(elem)) x.i = ints[k];
  else x.u = uints[k];
  return x;
}

std::string ggml_type_name(uint32_t type) {
  // ggml.h's enum ggml_type; 4, 5 and 31..33 were removed from ggml, 36..38 too.
  static const char* const names[] = {"F32",    "F16",     "Q4_0",   "Q4_1",   nullptr, nullptr, "Q5_0",  "Q5_1",
                                      "Q8_0",   "Q8_1",    "Q2_K",   "Q3_K",   "Q4_K",  "Q5_K",  "Q6_K",  "Q8_K",
                                      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
                                      "I8",     "I16",     "I32",    "I64",    "F64",   "IQ1_M", "BF16",  "Q4_0_4_4",
                                      "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", nullptr, nullptr, nullptr, "MXFP4"};
  if (type < std::size(names) && names[type]) return names[type];
  return "unknown type " + std::to_string(type);
}

std::optional<std::pair<int64_t, int64_t>> ggml_block_layout(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::f32: return std::pair<int64_t, int64_t>{1, 4};
    case GgmlType::f16: return std::pair<int64_t, int64_t>{1, 2};
    case GgmlType::bf16: return std::pair<int64_t, int64_t>{1, 2};
    case GgmlType::q8_0: return std::pair<int64_t, int64_t>{32, 34};
    case GgmlType::q4_0: return std::pair<int64_t, int64_t>{32, 18};
    case GgmlType::q4_1: return std::pair<int64_t, int64_t>{32, 20};
    case GgmlType::q5_0: return std::pair<int64_t, int64_t>{32, 22};
    case GgmlType::q5_1: return std::pair<int64_t, int64_t>{32, 24};
    case GgmlType::q4_k: return std::pair<int64_t, int64_t>{256, 144};
    case GgmlType::q5_k: return std::pair<int64_t, int64_t>{256, 176};
    case GgmlType::q6_k: return std::pair<int64_t, int64_t>{256, 210};
  }
  return std::nullopt;
}

namespace {
// The 6-bit scale and min of sub-block s of a Q4_K / Q5_K super-block
// (ggml's get_scale_min_k4): 0-3 in the low 6 bits of bytes s and s + 4,
// 4-7 in the nibbles of bytes 8-11 plus the top 2 bits of bytes s - 4 and s.
void scale_min_k4(int s, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (s < 4) {
    *sc = q[s] & 63;
    *m = q[s + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[s + 4] & 0x0f) | ((q[s - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[s + 4] >> 4) | ((q[s] >> 6) << 4));
  }
}

// Q4_K and Q5_K: qh is null for Q4_K. Products in the order gguf's numpy
// reference takes them ((d sc) q - (dmin m)), so both round alike.
void dequantize_k4_k5(const uint8_t* p, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = half_bits(p), dmin = half_bits(p + 2);
  for (int s = 0; s < 8; ++s) {
    uint8_t sc, m;
    scale_min_k4(s, p + 4, &sc, &m);
    const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      int q = (qs[32 * (s / 2) + i] >> (4 * (s % 2))) & 0x0f;
      if (qh) q |= ((qh[i] >> s) & 1) << 4;
      const float dq = ds * static_cast<float>(q);
      y[32 * s + i] = dq - dm;
    }
  }
}
}  // namespace

void ggml_dequantize(GgmlType type, const uint8_t* src, int64_t n, float* dst) {
  switch (type) {
    case GgmlType::f32:
      for (int64_t i = 0; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, src + 4 * i, 4);  // the file is little-endian, so is every host this builds on
        dst[i] = std::bit_cast<float>(b);
      }
      return;
    case GgmlType::f16:
      for (int64_t i = 0; i < n; ++i) dst[i] = half_bits(src + 2 * i);
      return;
    case GgmlType::bf16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(static_cast<uint16_t>(src[2 * i] | src[2 * i + 1] << 8));
      return;
    case GgmlType::q8_0:
      for (int64_t b = 0; b < n / 32; ++b) {
        const uint8_t* p = src + 34 * b;
        const float d = half_bits(p);
        for (int j = 0; j < 32; ++j) dst[32 * b + j] = d * static_cast<float>(static_cast<int8_t>(p[2 + j]));
      }
      return;
    case GgmlType::q4_0:
      for (int64_t b = 0; b < n / 32; ++b) {
        const uint8_t* p = src + 18 * b;
        const float d = half_bits(p);
        for (int j = 0; j < 16; ++j) {
          dst[32 * b + j] = d * static_cast<float>((p[2 + j] & 0x0f) - 8);
          dst[32 * b + j + 16] = d * static_cast<float>((p[2 + j] >> 4) - 8);
        }
      }
      return;
    case GgmlType::q4_1:
      for (int64_t b = 0; b < n / 32; ++b) {
        const uint8_t* p = src + 20 * b;
        const float d = half_bits(p), m = half_bits(p + 2);
        for (int j = 0; j < 16; ++j) {
          dst[32 * b + j] = d * static_cast<float>(p[4 + j] & 0x0f) + m;
          dst[32 * b + j + 16] = d * static_cast<float>(p[4 + j] >> 4) + m;
        }
      }
      return;
    case GgmlType::q5_0:
    case GgmlType::q5_1: {
      const bool has_m = type == GgmlType::q5_1;
      const int64_t bytes = has_m ? 24 : 22;
      for (int64_t b = 0; b < n / 32; ++b) {
        const uint8_t* p = src + bytes * b;
        const float d = half_bits(p), m = has_m ? half_bits(p + 2) : 0.0f;
        const uint8_t* h = p + (has_m ? 4 : 2);
        const uint32_t qh = uint32_t{h[0]} | uint32_t{h[1]} << 8 | uint32_t{h[2]} << 16 | uint32_t{h[3]} << 24;
        const uint8_t* qs = h + 4;
        for (int j = 0; j < 32; ++j) {
          const int q = ((j < 16 ? qs[j] : qs[j - 16] >> 4) & 0x0f) | static_cast<int>((qh >> j) & 1) << 4;
          dst[32 * b + j] = has_m ? d * static_cast<float>(q) + m : d * static_cast<float>(q - 16);
        }
      }
      return;
    }
    case GgmlType::q4_k:
      for (int64_t b = 0; b < n / 256; ++b) dequantize_k4_k5(src + 144 * b, nullptr, src + 144 * b + 16, dst + 256 * b);
      return;
    case GgmlType::q5_k:
      for (int64_t b = 0; b < n / 256; ++b)
        dequantize_k4_k5(src + 176 * b, src + 176 * b + 16, src + 176 * b + 48, dst + 256 * b);
      return;
    case GgmlType::q6_k:
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* ql = src + 210 * b;
        const uint8_t* qh = ql + 128;
        const auto* sc = reinterpret_cast<const int8_t*>(qh + 64);
        const float d = half_bits(qh + 80);
        for (int v = 0; v < 256; ++v) {
          const int h = v / 128, r = v % 128;
          const int lo = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0f;
          const int hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
          const float ds = d * static_cast<float>(sc[v / 16]);
          dst[256 * b + v] = ds * static_cast<float>((lo | hi << 4) - 32);
        }
      }
      return;
  }
  TS_FAIL("ggml_dequantize: type " << ggml_type_name(static_cast<uint32_t>(type)) << " is not dequantised here");
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

std::vector<int64_t> GgufTensorInfo::shape() const { return {ne.rbegin(), ne.rend()}; }

GgufFile GgufFile::read(const std::string& path) { return parse(file_read_all(path), path); }

GgufFile GgufFile::parse(std::string bytes, const std::string& origin) {
  GgufFile f;
  f.origin_ = origin;
  f.bytes_ = std::move(bytes);
  Cursor c(f.bytes_, f.origin_);
  c.need(4, "the magic");
  const std::string magic = f.bytes_.substr(0, 4);
  if (magic != "GGUF") {
    std::string shown;
    for (unsigned char ch : magic) shown += ch >= 0x20 && ch < 0x7f ? std::string(1, static_cast<char>(ch)) : "\\x" + std::string{"0123456789abcdef"[ch >> 4], "0123456789abcdef"[ch & 15]};
    TS_FAIL(origin << ": not a GGUF file: magic \"" << shown << "\", expected \"GGUF\"");
  }
  c.uint(4, "the magic");
  const auto version = static_cast<uint32_t>(c.uint(4, "version"));
  const uint32_t swapped = (version >> 24) | ((version >> 8) & 0xff00u) | ((version << 8) & 0xff0000u) | (version << 24);
  TS_CHECK(!(swapped == 2 || swapped == 3), origin << ": version: big-endian GGUF (version " << swapped << ") is not supported");
  TS_CHECK(version != 1, origin << ": version: GGUF version 1 (32-bit counts) is not supported, only 2 and 3");
  TS_CHECK(version == 2 || version == 3, origin << ": version: GGUF version " << version << " is not supported, only 2 and 3");
  f.version_ = version;
  const uint64_t n_tensors = c.uint(8, "tensor_count");
  const uint64_t n_kv = c.uint(8, "kv_count");
  // A key/value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info 8 + 4 + 8 + 4 + 8.
  TS_CHECK(n_kv <= c.left() / 13, origin << ": kv_count " << n_kv << " cannot fit in the " << c.left()
                                         << " bytes after the header (each key/value takes at least 13)");
  TS_CHECK(n_tensors <= c.left() / 32, origin << ": tensor_count " << n_tensors << " cannot fit in the " << c.left()
                                              << " bytes after the header (each tensor info takes at least 32)");
  std::set<std::string> keys;
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string where = "metadata[" + std::to_string(k) + "]";
    std::string key = c.string(where + " key");
    TS_CHECK(keys.insert(key).second, origin << ": " << where << ": duplicate key \"" << key << "\"");
    const auto t = static_cast<uint32_t>(c.uint(4, "metadata \"" + key + "\" type"));
    TS_CHECK(value_type_known(t), origin << ": metadata \"" << key << "\": unknown value type " << t << " (0..12)");
    GgufValue v = read_value(c, static_cast<GgufValueType>(t), "metadata \"" + key + "\"", 0, origin);
    f.kv_.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = f.find("general.alignment")) {
    TS_CHECK(a->type == GgufValueType::uint32, origin << ": metadata \"general.alignment\" must be a uint32, got "
                                                      << gguf_value_type_name(a->type));
    TS_CHECK(a->u != 0 && (a->u & (a->u - 1)) == 0,
             origin << ": metadata \"general.alignment\" must be a power of two, got " << a->u);
    f.alignment_ = a->u;
  }
  std::set<std::string> names;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo t;
    t.name = c.string("tensor_infos[" + std::to_string(k) + "] name");
    const std::string where = "tensor \"" + t.name + "\"";
    TS_CHECK(names.insert(t.name).second, origin << ": " << where << ": duplicate tensor name");
    const auto n_dims = static_cast<uint32_t>(c.uint(4, where + " n_dims"));
    TS_CHECK(n_dims >= 1 && n_dims <= kMaxDims, origin << ": " << where << ": n_dims must be in [1, " << kMaxDims << "], got " << n_dims);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = c.uint(8, where + " ne[" + std::to_string(d) + "]");
      TS_CHECK(ne >= 1 && ne <= (uint64_t{1} << 62) / numel,
               origin << ": " << where << ": ne[" << d << "] = " << ne << " is zero or makes the element count overflow");
      numel *= ne;
      t.ne.push_back(static_cast<int64_t>(ne));
    }
    t.type = static_cast<uint32_t>(c.uint(4, where + " type"));
    const auto layout = ggml_block_layout(t.type);
    TS_CHECK(ggml_type_name(t.type).rfind("unknown", 0) != 0, origin << ": " << where << ": unknown tensor type " << t.type);
    TS_CHECK(layout, origin << ": " << where << ": tensor type " << ggml_type_name(t.type) << " (" << t.type
                            << ") is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
    const auto [block, block_bytes] = *layout;
    TS_CHECK(t.ne[0] % block == 0, origin << ": " << where << ": ne[0] = " << t.ne[0] << " is not a multiple of "
                                          << ggml_type_name(t.type) << "'s block of " << block << " values");
    // F32's 2^62 values would be 2^64 bytes: a count that wraps to 0 passes any size check.
    TS_CHECK(numel / static_cast<uint64_t>(block) <= (uint64_t{1} << 62) / static_cast<uint64_t>(block_bytes),
             origin << ": " << where << ": " << numel << " values of " << ggml_type_name(t.type) << " make the byte count overflow");
    t.nbytes = numel / static_cast<uint64_t>(block) * static_cast<uint64_t>(block_bytes);
    t.offset = c.uint(8, where + " offset");
    TS_CHECK(t.offset % f.alignment_ == 0, origin << ": " << where << ": offset " << t.offset
                                                  << " is not a multiple of the alignment " << f.alignment_);
    f.tensors_.push_back(std::move(t));
  }
  const uint64_t pad = (f.alignment_ - c.pos() % f.alignment_) % f.alignment_;
  f.data_offset_ = c.pos() + pad;
  const uint64_t size = f.bytes_.size();
  const uint64_t data_size = f.data_offset_ <= size ? size - f.data_offset_ : 0;
  TS_CHECK(f.tensors_.empty() || f.data_offset_ <= size, origin << ": truncated file: the data section starts at "
                                                                 << f.data_offset_ << ", the file ends at " << size);
  for (const auto& t : f.tensors_)
    TS_CHECK(t.nbytes <= data_size && t.offset <= data_size - t.nbytes,
             origin << ": tensor \"" << t.name << "\": " << t.nbytes << " bytes of data at offset " << t.offset
                    << " run past the end of the data section (" << data_size << " bytes): truncated file?");
  std::vector<const GgufTensorInfo*> by_offset;
  for (const auto& t : f.tensors_) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_offset.size(); ++k)
    TS_CHECK(by_offset[k - 1]->offset + by_offset[k - 1]->nbytes <= by_offset[k]->offset,
             origin << ": tensor \"" << by_offset[k]->name << "\": data at offset " << by_offset[k]->offset
                    << " overlaps tensor \"" << by_offset[k - 1]->name << "\" [" << by_offset[k - 1]->offset << ", "
                    << by_offset[k - 1]->offset + by_offset[k - 1]->nbytes << ")");
  return f;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {
int64_t integer_in(const GgufValue& v, const std::string& where, int64_t lo, int64_t hi) {
  TS_CHECK(v.is_integer(), where << " must be an integer, got " << gguf_value_type_name(v.type));
  const bool is_unsigned = v.type == GgufValueType::uint8 || v.type == GgufValueType::uint16 ||
                           v.type == GgufValueType::uint32 || v.type == GgufValueType::uint64;
  if (is_unsigned) {
    TS_CHECK(v.u <= static_cast<uint64_t>(INT64_MAX) && static_cast<int64_t>(v.u) >= lo && static_cast<int64_t>(v.u) <= hi,
             where << " must be in [" << lo << ", " << hi << "], got " << v.u);
    return static_cast<int64_t>(v.u);
  }
  TS_CHECK(v.i >= lo && v.i <= hi, where << " must be in [" << lo << ", " << hi << "], got " << v.i);
  return v.i;
}
}  // namespace

std::optional<int64_t> GgufFile::get_int_opt(const std::string& key, int64_t lo, int64_t hi) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  return integer_in(*v, origin_ + ": metadata \"" + key + "\"", lo, hi);
}

int64_t GgufFile::get_int(const std::string& key, int64_t lo, int64_t hi) const {
  const auto v = get_int_opt(key, lo, hi);
  TS_CHECK(v, origin_ << ": metadata \"" << key << "\" is missing");
  return *v;
}

std::optional<double> GgufFile::get_float_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  TS_CHECK(v->type == GgufValueType::float32 || v->type == GgufValueType::float64,
           origin_ << ": metadata \"" << key << "\" must be a float32 or float64, got " << gguf_value_type_name(v->type));
  return v->f;
}

double GgufFile::get_float(const std::string& key) const {
  const auto v = get_float_opt(key);
  TS_CHECK(v, origin_ << ": metadata \"" << key << "\" is missing");
  return *v;
}

std::optional<std::string> GgufFile::get_string_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  TS_CHECK(v->type == GgufValueType::string,
           origin_ << ": metadata \"" << key << "\" must be a string, got " << gguf_value_type_name(v->type));
  return v->s;
}

std::string GgufFile::get_string(const std::string& key) const {
  auto v = get_string_opt(key);
  TS_CHECK(v, origin_ << ": metadata \"" << key << "\" is missing");
  return *v;
}

std::optional<bool> GgufFile::get_bool_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  TS_CHECK(v->type == GgufValueType::boolean,
           origin_ << ": metadata \"" << key << "\" must be a bool, got " << gguf_value_type_name(v->type));
  return v->u != 0;
}

std::vector<std::string> GgufFile::get_strings(const std::string& key) const {
  const GgufValue* v = find(key);
  TS_CHECK(v, origin_ << ": metadata \"" << key << "\" is missing");
  TS_CHECK(v->type == GgufValueType::array && v->elem == GgufValueType::string,
           origin_ << ": metadata \"" << key << "\" must be an array of string, got "
                   << (v->type == GgufValueType::array ? std::string("an array of ") + gguf_value_type_name(v->elem)
                                                       : std::string(gguf_value_type_name(v->type))));
  return v->strings;
}

std::vector<int64_t> GgufFile::get_ints(const std::string& key) const {
  const GgufValue* v = find(key);
  TS_CHECK(v, origin_ << ": metadata \"" << key << "\" is missing");
  TS_CHECK(v->type == GgufValueType::array, origin_ << ": metadata \"" << key << "\" must be an array of integers, got "
                                                    << gguf_value_type_name(v->type));
  TS_CHECK(v->elem != GgufValueType::array && !is_float(v->elem) && v->elem != GgufValueType::string,
           origin_ << ": metadata \"" << key << "\" must be an array of integers, got an array of " << gguf_value_type_name(v->elem));
  std::vector<int64_t> out;
  out.reserve(v->count());
  for (size_t k = 0; k < v->count(); ++k)
    out.push_back(integer_in(v->element(k), origin_ + ": metadata \"" + key + "\"[" + std::to_string(k) + "]", INT64_MIN, INT64_MAX));
  return out;
}

HostTensor GgufFile::tensor_f32(const GgufTensorInfo& t) const {
  HostTensor h;
  h.shape = t.shape();
  h.data.resize(static_cast<size_t>(t.numel()));
  ggml_dequantize(static_cast<GgmlType>(t.type), reinterpret_cast<const uint8_t*>(bytes_.data() + data_offset_ + t.offset),
                  t.numel(), h.data.data());
  return h;
}

}  // namespace triescope
