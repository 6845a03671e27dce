// Builds a Model from the "model" object of a sample file.
#pragma once
#include <memory>

#include "core/config/json_reader.h"
#include "core/model/model.h"

namespace triescope {

// `r` reads the model object; errors name r.origin() and the field.
std::unique_ptr<Model> model_from_json(JsonObjectReader r);

// Optional libraries add model types here (triescope_torch registers
// "transformer" through torch_models_register()), so triescope_core never
// links them. Registering a type twice replaces the builder.
using ModelBuilder = std::unique_ptr<Model> (*)(JsonObjectReader& r);
void model_type_register(const std::string& type, ModelBuilder build);

// The model types this build knows, for error messages.
std::string model_types();

// A "kv_shape" object {layers, kv_heads, head_dim, dtype_bytes} over
// `defaults` (absent fields keep theirs): each an integer in its range
// (layers, kv_heads 1-1024, head_dim 1-65536, dtype_bytes 1-8), no other
// field; errors name `origin` and kv_shape.<field>.
KvShape kv_shape_read(const json& kv_shape, const std::string& origin, KvShape defaults);

// Token ids for a list of token strings against a vocabulary (scripted samples).
std::vector<int32_t> tokens_from_strings(const std::vector<std::string>& vocab, const json& words,
                                         const std::string& where);

}  // namespace triescope
