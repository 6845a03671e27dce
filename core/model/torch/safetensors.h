// safetensors files (Hugging Face): an 8-byte little-endian header length N,
// N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}} (offsets
// relative to the end of the header), then the raw little-endian tensors.
// Parsed here with nlohmann/json; every tensor is converted to fp32 on load.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace triescope {

// A host fp32 tensor, row-major.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // [prod(shape)]
  int64_t numel() const;
};
using TensorMap = std::map<std::string, HostTensor>;

// Reads every tensor of one .safetensors file. Dtypes F32, F16 and BF16 are
// accepted (converted to fp32); anything else, a header length past the end,
// a bad offset, a shape that does not match its byte range or a truncated
// file is an Error naming the file and the tensor.
TensorMap safetensors_read(const std::string& path);

// Reads a model directory: model.safetensors, or the shards listed in
// model.safetensors.index.json ("weight_map": {tensor: shard file}).
TensorMap safetensors_read_dir(const std::string& dir);

// Writes `tensors` as one file (temp + rename). dtype: "F32", "F16" or "BF16"
// (round to nearest even).
void safetensors_write(const std::string& path, const TensorMap& tensors, const std::string& dtype = "F32");

// The conversions, exposed for tests.
float half_to_float(uint16_t h);
float bf16_to_float(uint16_t h);
uint16_t float_to_half(float f);
uint16_t float_to_bf16(float f);

}  // namespace triescope
