#include "core/model/model_factory.h"

#include <cmath>
#include <map>

#include "core/common/error.h"
#include "core/model/scripted_model.h"
#include "core/model/synthetic_model.h"

namespace triescope {

namespace {
KvShape read_shape_fields(JsonObjectReader k, KvShape s) {
  s.layers = static_cast<int32_t>(k.get_int("layers", 1, 1024, s.layers));
  s.kv_heads = static_cast<int32_t>(k.get_int("kv_heads", 1, 1024, s.kv_heads));
  s.head_dim = static_cast<int32_t>(k.get_int("head_dim", 1, 65536, s.head_dim));
  s.dtype_bytes = static_cast<int32_t>(k.get_int("dtype_bytes", 1, 8, s.dtype_bytes));
  k.finish();
  return s;
}

KvShape read_shape(JsonObjectReader& r) { return r.has("kv_shape") ? read_shape_fields(r.object("kv_shape"), KvShape{}) : KvShape{}; }
}  // namespace

KvShape kv_shape_read(const json& kv_shape, const std::string& origin, KvShape defaults) {
  TS_CHECK(kv_shape.is_object(), origin << ": kv_shape must be an object {layers, kv_heads, head_dim, dtype_bytes}, got " << kv_shape.dump());
  return read_shape_fields(JsonObjectReader(kv_shape, origin, "kv_shape"), defaults);
}

std::vector<int32_t> tokens_from_strings(const std::vector<std::string>& vocab, const json& words,
                                         const std::string& where) {
  TS_CHECK(words.is_array(), where << " must be an array of token strings");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < words.size(); ++i) {
    TS_CHECK(words[i].is_string(), where << "[" << i << "] must be a string, got " << words[i].dump());
    const auto w = words[i].get<std::string>();
    auto it = std::find(vocab.begin(), vocab.end(), w);
    TS_CHECK(it != vocab.end(), where << "[" << i << "] = \"" << w << "\" is not in the vocabulary");
    ids.push_back(static_cast<int32_t>(it - vocab.begin()));
  }
  return ids;
}

namespace {
std::map<std::string, ModelBuilder>& model_registry() {
  static std::map<std::string, ModelBuilder> r;
  return r;
}
}  // namespace

void model_type_register(const std::string& type, ModelBuilder build) { model_registry()[type] = build; }

std::string model_types() {
  std::string s = "\"synthetic\", \"scripted\"";
  for (const auto& [name, build] : model_registry()) s += ", \"" + name + "\"";
  return s;
}

std::unique_ptr<Model> model_from_json(JsonObjectReader r) {
  const std::string type = r.get_string("type");
  if (type == "synthetic") {
    SyntheticConfig c;
    c.vocab_size = static_cast<int32_t>(r.get_int("vocab_size", 2, 1 << 20));
    c.seed = static_cast<uint64_t>(r.get_int("seed", 0, INT64_MAX, 1));
    c.peakiness_q8 = static_cast<int32_t>(std::lround(r.get_double("peakiness", 0.0, 64.0, 1.0) * 256));
    c.repetitiveness_q8 = static_cast<int32_t>(std::lround(r.get_double("repetitiveness", 0.0, 1.0, 0.0) * 256));
    c.ngram = static_cast<int32_t>(r.get_int("ngram", 1, 64, 2));
    c.eos_token = static_cast<int32_t>(r.get_int("eos_token", -1, c.vocab_size - 1, -1));
    c.eos_per_million = static_cast<int32_t>(std::lround(r.get_double("eos_rate", 0.0, 1.0, 0.0) * 1e6));
    TS_CHECK(c.eos_per_million == 0 || c.eos_token >= 0, r.where("eos_rate") << " needs model.eos_token to be set");
    c.perturb_seed = static_cast<uint64_t>(r.get_int("perturb_seed", 0, INT64_MAX, 0));
    c.perturb_q8 = static_cast<int32_t>(std::lround(r.get_double("perturb", 0.0, 4.0, 0.0) * 256));
    c.nominal_shape = read_shape(r);
    r.finish();
    return std::make_unique<SyntheticModel>(c);
  }
  if (type == "scripted") {
    ScriptedConfig c;
    const json& vocab = r.raw("vocab");
    TS_CHECK(vocab.is_array() && vocab.size() >= 2, r.where("vocab") << " must be an array of >= 2 strings");
    for (size_t i = 0; i < vocab.size(); ++i) {
      TS_CHECK(vocab[i].is_string(), r.where("vocab") << "[" << i << "] must be a string");
      c.vocab.push_back(vocab[i].get<std::string>());
    }
    c.default_logit = static_cast<float>(r.get_double("default_logit", -1e4, 1e4, -20.0));
    const json& table = r.raw("table");
    TS_CHECK(table.is_array(), r.where("table") << " must be an array");
    for (size_t i = 0; i < table.size(); ++i) {
      const std::string f = r.field("table") + "[" + std::to_string(i) + "]";
      JsonObjectReader e(table[i], r.origin(), f);
      ScriptedEntry entry;
      entry.context = tokens_from_strings(c.vocab, e.raw("context"), r.origin() + ": " + f + ".context");
      auto next = e.object("next");
      const json& nj = e.raw("next");
      for (auto& [word, logit] : nj.items()) {
        auto ids = tokens_from_strings(c.vocab, json::array({word}), r.origin() + ": " + f + ".next");
        TS_CHECK(logit.is_number(), next.where(word) << " must be a number");
        entry.next.emplace_back(ids[0], logit.get<float>());
      }
      e.finish();
      c.entries.push_back(std::move(entry));
    }
    c.nominal_shape = read_shape(r);
    r.finish();
    return std::make_unique<ScriptedModel>(std::move(c));
  }
  if (auto it = model_registry().find(type); it != model_registry().end()) return it->second(r);
  TS_FAIL(r.where("type") << " must be one of " << model_types() << ", got \"" << type << "\"");
}

}  // namespace triescope
