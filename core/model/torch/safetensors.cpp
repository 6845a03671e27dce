#include "core/model/torch/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/config/json_reader.h"

namespace triescope {

namespace fs = std::filesystem;
using json = nlohmann::json;

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: value = man * 2^-24
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(bits);
}

float bf16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);  // quiet nan
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

uint16_t float_to_half(float f) {
  const uint32_t b = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  const uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (a < 0x38800000u) {                        // below the smallest normal half: subnormal or zero
    const float v = std::bit_cast<float>(a);
    return sign | static_cast<uint16_t>(std::nearbyint(v * 16777216.0f));  // units of 2^-24, ties to even
  }
  // Normal: rebias the exponent and round the mantissa to 10 bits, ties to even.
  uint32_t r = a - (112u << 23);
  r += 0xfffu + ((r >> 13) & 1u);
  return sign | static_cast<uint16_t>(r >> 13);
}

namespace {
size_t dtype_size(const std::string& d) {
  if (d == "F32") return 4;
  if (d == "F16" || d == "BF16") return 2;
  return 0;
}
}  // namespace

static TensorMap safetensors_read_checked(const std::string& path);

TensorMap safetensors_read(const std::string& path) {
  return reader_boundary(path, [&] { return safetensors_read_checked(path); });
}

static TensorMap safetensors_read_checked(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in.good(), path << ": cannot open safetensors file");
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  TS_CHECK(size >= 8, path << ": truncated safetensors file (" << size << " bytes, the header length alone takes 8)");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  TS_CHECK(n <= size - 8, path << ": header length " << n << " runs past the end of the file (" << size << " bytes)");
  std::string header(static_cast<size_t>(n), '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  TS_CHECK(in.good(), path << ": cannot read the " << n << "-byte header");
  const json h = json_parse_text(header, path + ": header", 1);
  TS_CHECK(h.is_object(), path << ": header must be a JSON object");
  const uint64_t data_begin = 8 + n, data_size = size - data_begin;
  TensorMap out;
  std::vector<char> buf;
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> spans;  // (begin, end, name) of every tensor's data
  for (auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    const std::string where = path + ": tensor \"" + name + "\"";
    TS_CHECK(t.is_object() && t.contains("dtype") && t.contains("shape") && t.contains("data_offsets"),
             where << " must have dtype, shape and data_offsets");
    TS_CHECK(t["dtype"].is_string(), where << ": dtype must be a string");
    const std::string dtype = t["dtype"].get<std::string>();
    const size_t es = dtype_size(dtype);
    TS_CHECK(es != 0, where << ": dtype \"" << dtype << "\" is not supported (F32, F16, BF16)");
    HostTensor ht;
    TS_CHECK(t["shape"].is_array(), where << ": shape must be an array");
    for (const auto& d : t["shape"]) {
      const auto x = json_int_in(d, 0, int64_t{1} << 40);
      TS_CHECK(x, where << ": shape entries must be integers in [0, 2^40], got " << json_brief(t["shape"]));
      ht.shape.push_back(*x);
    }
    // The element count is checked against the file's data bytes dimension by
    // dimension, so it never wraps around 2^64 ([2^39, 2^25] is 0 mod 2^64).
    uint64_t numel = std::find(ht.shape.begin(), ht.shape.end(), 0) != ht.shape.end() ? 0 : 1;
    for (int64_t d : ht.shape) {
      if (numel == 0) break;
      TS_CHECK(numel <= data_size / es / static_cast<uint64_t>(d),
               where << ": shape " << json_brief(t["shape"]) << " x " << dtype << " needs more bytes than the file's " << data_size
                     << " bytes of data");
      numel *= static_cast<uint64_t>(d);
    }
    const json& off = t["data_offsets"];
    TS_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(),
             where << ": data_offsets must be [begin, end], got " << json_brief(off));
    const uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    TS_CHECK(b <= e, where << ": data_offsets [" << b << ", " << e << "] end before they begin");
    TS_CHECK(e - b == numel * es, where << ": shape " << json_brief(t["shape"]) << " x " << dtype << " needs " << numel * es
                                        << " bytes, data_offsets give " << e - b);
    TS_CHECK(e <= data_size, where << ": data ends at byte " << data_begin + e << " but the file is truncated at " << size
                                   << " bytes");
    spans.emplace_back(b, e, name);
    buf.resize(static_cast<size_t>(e - b));
    in.seekg(static_cast<std::streamoff>(data_begin + b));
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    TS_CHECK(in.good(), where << ": read failed");
    ht.data.resize(static_cast<size_t>(numel));
    const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
    for (size_t i = 0; i < numel; ++i) {
      if (es == 4) {
        const uint32_t v = uint32_t{p[4 * i]} | uint32_t{p[4 * i + 1]} << 8 | uint32_t{p[4 * i + 2]} << 16 |
                           uint32_t{p[4 * i + 3]} << 24;
        ht.data[i] = std::bit_cast<float>(v);
      } else {
        const uint16_t v = static_cast<uint16_t>(p[2 * i] | p[2 * i + 1] << 8);
        ht.data[i] = dtype == "F16" ? half_to_float(v) : bf16_to_float(v);
      }
    }
    out.emplace(name, std::move(ht));
  }
  // The tensors' data must tile the data section exactly, as the reference
  // (Rust) safetensors checks: no overlap (two tensors sharing bytes), no gap,
  // no trailing bytes.
  std::sort(spans.begin(), spans.end());
  uint64_t at = 0;
  std::string prev;
  for (const auto& [b, e, name] : spans) {
    TS_CHECK(b >= at, path << ": tensor \"" << name << "\": data_offsets [" << b << ", " << e << "] overlap tensor \"" << prev
                           << "\", which ends at " << at << " (tensors' data must tile the data section)");
    TS_CHECK(b == at, path << ": data bytes [" << at << ", " << b << ") belong to no tensor (a gap before tensor \"" << name
                           << "\"; tensors' data must tile the data section)");
    at = e;
    prev = name;
  }
  TS_CHECK(at == data_size, path << ": the data section holds " << data_size << " bytes, the tensors' data_offsets end at " << at << ": "
                                 << data_size - at << " trailing bytes");
  return out;
}

TensorMap safetensors_read_dir(const std::string& dir) {
  const fs::path d(dir);
  TS_CHECK(fs::is_directory(d), dir << ": not a directory");
  const fs::path single = d / "model.safetensors", index = d / "model.safetensors.index.json";
  if (fs::exists(single)) return safetensors_read(single.string());
  TS_CHECK(fs::exists(index), dir << ": has neither model.safetensors nor model.safetensors.index.json");
  const json j = json_load_file(index.string());
  TS_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
           index.string() << ": weight_map must be an object {tensor: shard file}");
  std::map<std::string, std::vector<std::string>> shards;
  for (auto& [name, file] : j["weight_map"].items()) {
    TS_CHECK(file.is_string(), index.string() << ": weight_map." << name << " must be a file name");
    const std::string f = file.get<std::string>();
    TS_CHECK(f.find('/') == std::string::npos && f.find("..") == std::string::npos,
             index.string() << ": weight_map." << name << " = \"" << f << "\" must name a file in the same directory");
    shards[f].push_back(name);
  }
  TensorMap out;
  for (auto& [file, names] : shards) {
    TensorMap part = safetensors_read((d / file).string());
    for (const auto& name : names) {
      auto it = part.find(name);
      TS_CHECK(it != part.end(), index.string() << ": weight_map says tensor \"" << name << "\" is in " << file
                                                << ", but that shard does not hold it");
      out[name] = std::move(it->second);
    }
  }
  return out;
}

void safetensors_write(const std::string& path, const TensorMap& tensors, const std::string& dtype) {
  const size_t es = dtype_size(dtype);
  TS_CHECK(es != 0, path << ": cannot write dtype \"" << dtype << "\" (F32, F16, BF16)");
  json h = json::object();
  uint64_t off = 0;
  for (const auto& [name, t] : tensors) {
    TS_CHECK(static_cast<int64_t>(t.data.size()) == t.numel(), path << ": tensor \"" << name << "\" holds " << t.data.size()
                                                                     << " values for shape of " << t.numel());
    const uint64_t bytes = t.data.size() * es;
    h[name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  h["__metadata__"] = {{"format", "pt"}};
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');  // the format pads the header to 8 bytes with spaces
  std::string out;
  out.reserve(8 + header.size() + off);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((static_cast<uint64_t>(header.size()) >> (8 * i)) & 0xff));
  out += header;
  for (const auto& [name, t] : tensors)
    for (float v : t.data) {
      if (es == 4) {
        const uint32_t b = std::bit_cast<uint32_t>(v);
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((b >> (8 * i)) & 0xff));
      } else {
        const uint16_t b = dtype == "F16" ? float_to_half(v) : float_to_bf16(v);
        out.push_back(static_cast<char>(b & 0xff));
        out.push_back(static_cast<char>(b >> 8));
      }
    }
  file_write_atomic(path, out);
}

}  // namespace triescope
