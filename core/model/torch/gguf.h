// GGUF, ggml's model file (llama.cpp), versions 2 and 3, little-endian:
//   "GGUF", uint32 version, uint64 tensor_count, uint64 kv_count,
//   kv_count x {string key, uint32 value type, value},
//   tensor_count x {string name, uint32 n_dims, n_dims x uint64 ne, uint32 ggml type, uint64 offset},
//   padding to general.alignment (default 32), then the tensor data (offsets from its start).
// A string is a uint64 byte count and the bytes; an array is a uint32 element
// type, a uint64 count and the elements. ne[0] is the contiguous dimension, so
// a tensor's row-major shape is ne reversed.
//
// The reader holds the whole file and checks every count, length, dimension
// and offset against the bytes that are really there before it allocates or
// reads, so a file that lies gets an Error naming the file and the field.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/torch/safetensors.h"

namespace triescope {

enum class GgufValueType : uint32_t {
  uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6,
  boolean = 7, string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);

// One metadata value. Integers keep their sign in `u` or `i` (whichever the
// type is), floats widen to double, a bool is u = 0 / 1. An array keeps its
// elements packed in the one vector its element type selects (8 bytes per
// number, so a hostile file cannot make the reader hold more than a small
// multiple of its own size).
struct GgufValue {
  GgufValueType type = GgufValueType::uint8;
  uint64_t u = 0;                              // uint8/16/32/64, bool
  int64_t i = 0;                               // int8/16/32/64
  double f = 0.0;                              // float32, float64
  std::string s;                               // string
  GgufValueType elem = GgufValueType::uint8;   // array: element type
  std::vector<uint64_t> uints;                 // array of uint8/16/32/64 or bool
  std::vector<int64_t> ints;                   // array of int8/16/32/64
  std::vector<double> floats;                  // array of float32/64
  std::vector<std::string> strings;            // array of string
  std::vector<GgufValue> arrays;               // array of array
  bool is_integer() const;
  size_t count() const;              // array: number of elements
  GgufValue element(size_t k) const;  // array: element k as a value of type elem
};

// ggml tensor types (ggml.h ids). Dequantised here: F32, F16, BF16, Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1 and the K-quants Q4_K, Q5_K, Q6_K (what llama.cpp's
// Q4_K_M / Q5_K_M / Q6_K files hold); a file holding any other type is
// refused, naming it.
enum class GgmlType : uint32_t {
  f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q4_k = 12, q5_k = 13, q6_k = 14, bf16 = 30,
};
// "Q4_K" for a type ggml knows, "unknown type 99" otherwise.
std::string ggml_type_name(uint32_t type);

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // [n_dims] ggml order: ne[0] is contiguous
  uint32_t type = 0;        // a GgmlType
  uint64_t offset = 0;      // from the start of the data section
  uint64_t nbytes = 0;      // bytes of its data in the file
  int64_t numel() const;
  std::vector<int64_t> shape() const;  // row-major: ne reversed
};

class GgufFile {
 public:
  // Reads and checks the whole file; errors name `path` and the field.
  static GgufFile read(const std::string& path);
  // The same from bytes in memory; `origin` names them in errors.
  static GgufFile parse(std::string bytes, const std::string& origin);

  const std::string& origin() const { return origin_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }  // file order
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }                 // file order

  const GgufValue* find(const std::string& key) const;
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  // Typed metadata: an Error naming the file and key when missing (the ones
  // without a default) or of another type. Integers accept any integer type
  // whose value lies in [lo, hi].
  int64_t get_int(const std::string& key, int64_t lo, int64_t hi) const;
  std::optional<int64_t> get_int_opt(const std::string& key, int64_t lo, int64_t hi) const;
  double get_float(const std::string& key) const;  // float32 or float64
  std::optional<double> get_float_opt(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::optional<std::string> get_string_opt(const std::string& key) const;
  std::optional<bool> get_bool_opt(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;  // array of string
  std::vector<int64_t> get_ints(const std::string& key) const;         // array of an integer type

  // A tensor's values as fp32, shape() (ne reversed).
  HostTensor tensor_f32(const GgufTensorInfo& t) const;

 private:
  std::string origin_;
  std::string bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<GgufTensorInfo> tensors_;
};

// Dequantises n values of `type` from src, ggml's block layouts (ggml-common.h):
//   Q8_0 {fp16 d, int8 q[32]}: x = d q
//   Q4_0 {fp16 d, uint8 q[16]}: x = d (nibble - 8)
//   Q4_1 {fp16 d, fp16 m, uint8 q[16]}: x = d nibble + m
//   Q5_0 {fp16 d, uint32 qh, uint8 q[16]}: x = d (nibble | bit << 4) - 16 d
//   Q5_1 {fp16 d, fp16 m, uint32 qh, uint8 q[16]}: x = d (nibble | bit << 4) + m
// (value j of a block of 32 is the low nibble of q[j] for j < 16, the high
// nibble of q[j - 16] after; bit j of qh is its fifth bit), and the super-blocks
// of 256: Q4_K / Q5_K {fp16 d, fp16 dmin, 6-bit scales and mins packed in 12
// bytes, (Q5_K: uint8 qh[32]), uint8 q[128]}: x = d sc[s] q - dmin m[s] over 8
// sub-blocks of 32; Q6_K {uint8 ql[128], uint8 qh[64], int8 sc[16], fp16 d}:
// x = d sc[s] (q - 32) over 16 sub-blocks of 16.
// n must be a multiple of the type's block size (the reader checks it).
void ggml_dequantize(GgmlType type, const uint8_t* src, int64_t n, float* dst);

// Block size (values) and block bytes of a dequantisable type; nullopt for the rest.
std::optional<std::pair<int64_t, int64_t>> ggml_block_layout(uint32_t type);

}  // namespace triescope
