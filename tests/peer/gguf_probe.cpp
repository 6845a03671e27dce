// What our GGUF path reads from a file, written out for tests/peer/test_gguf.py
// to compare with the gguf package and transformers on the same file:
//   gguf_probe metadata <file.gguf> <out.json>                  header, every key/value (typed), tensor infos
//   gguf_probe tensors  <file.gguf> <out.safetensors> [names]   tensors dequantised to F32 (GGUF names, ne reversed)
//   gguf_probe encode   <file.gguf> <texts.json> <out.json>     the file's tokenizer: ids and decoded text per text
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/config/json_reader.h"
#include "core/model/torch/gguf_llama.h"

using namespace triescope;
using json = nlohmann::json;

namespace {

json value_json(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::uint8: case GgufValueType::uint16: case GgufValueType::uint32: case GgufValueType::uint64:
      return v.u;
    case GgufValueType::int8: case GgufValueType::int16: case GgufValueType::int32: case GgufValueType::int64:
      return v.i;
    case GgufValueType::float32: case GgufValueType::float64: return v.f;
    case GgufValueType::boolean: return v.u != 0;
    case GgufValueType::string: return v.s;
    case GgufValueType::array: {
      json items = json::array();
      for (size_t k = 0; k < v.count(); ++k) items.push_back(value_json(v.element(k)));
      return {{"elem", gguf_value_type_name(v.elem)}, {"items", items}};
    }
  }
  return nullptr;
}

void write_json(const std::string& path, const json& j) {
  file_write_atomic(path, j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

int metadata(const std::string& file, const std::string& out) {
  const GgufFile f = GgufFile::read(file);
  json kv = json::array(), tensors = json::array();
  for (const auto& [k, v] : f.metadata()) kv.push_back({{"key", k}, {"type", gguf_value_type_name(v.type)}, {"value", value_json(v)}});
  for (const auto& t : f.tensors())
    tensors.push_back({{"name", t.name}, {"ne", t.ne}, {"type", ggml_type_name(t.type)}, {"offset", t.offset}, {"nbytes", t.nbytes}});
  write_json(out, {{"version", f.version()}, {"alignment", f.alignment()}, {"data_offset", f.data_offset()},
                   {"metadata", kv}, {"tensors", tensors}});
  return 0;
}

int tensors(const std::string& file, const std::string& out, const std::string& names) {
  const GgufFile f = GgufFile::read(file);
  TensorMap m;
  for (const auto& t : f.tensors())
    if (names.empty() || ("," + names + ",").find("," + t.name + ",") != std::string::npos) m[t.name] = f.tensor_f32(t);
  safetensors_write(out, m, "F32");
  return 0;
}

int encode(const std::string& file, const std::string& texts_path, const std::string& out) {
  const auto tok = gguf_tokenizer(GgufFile::read(file));
  TS_CHECK(tok, file << ": has no tokenizer");
  json res = json::array();
  for (const auto& t : json_load_file(texts_path)) {
    const auto ids = tok->encode(t.get<std::string>());
    res.push_back({{"ids", ids}, {"decoded", tok->decode(ids)}});
  }
  write_json(out, {{"pretokenizer", tok->pretokenizer()}, {"results", res}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 3 && a[0] == "metadata") return metadata(a[1], a[2]);
    if ((a.size() == 3 || a.size() == 4) && a[0] == "tensors") return tensors(a[1], a[2], a.size() == 4 ? a[3] : "");
    if (a.size() == 4 && a[0] == "encode") return encode(a[1], a[2], a[3]);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: gguf_probe metadata|tensors|encode <file.gguf> ... (see the header of tests/peer/gguf_probe.cpp)\n";
  return 2;
}
