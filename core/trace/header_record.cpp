#include "core/trace/header_record.h"

#include <climits>

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace triescope {

namespace {

constexpr const char* kSchema = "schema";
constexpr const char* kVersion = "version";
constexpr const char* kAlgorithm = "algorithm";
constexpr const char* kBackend = "backend";
constexpr const char* kConfig = "config";
constexpr const char* kModel = "model";
constexpr const char* kVerifyKind = "verify_kind";
constexpr const char* kVocab = "vocab";
constexpr const char* kSeams = "seams";
constexpr const char* kPrompt = "prompt";  // config.prompt

// An optional string field ("" when absent).
std::string read_string(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) return {};
  TS_CHECK(it->is_string(), where << ": field " << key << " must be a string");
  return it->get<std::string>();
}

// An optional object field (null when absent).
nlohmann::json read_object(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) return nullptr;
  TS_CHECK(it->is_object(), where << ": field " << key << " must be an object");
  return *it;
}

std::vector<std::string> read_vocab(const nlohmann::json& j, const std::string& where) {
  std::vector<std::string> out;
  const auto it = j.find(kVocab);
  if (it == j.end()) return out;
  TS_CHECK(it->is_array(), where << ": field " << kVocab << " must be an array of strings");
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& v = (*it)[i];
    TS_CHECK(v.is_string(), where << ": field " << kVocab << "[" << i << "] must be a string, got " << json_brief(v));
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

nlohmann::json HeaderRecord::to_json() const {
  nlohmann::json h = {{"kind", "header"}, {kSchema, kTraceFormat}, {kVersion, version}, {kAlgorithm, algorithm}, {kBackend, backend}};
  if (!config.is_null()) h[kConfig] = config;
  if (!model.is_null()) h[kModel] = model;
  if (!verify_kind.empty()) h[kVerifyKind] = verify_kind;
  if (!vocab.empty()) h[kVocab] = vocab;
  if (!seams.is_null()) h[kSeams] = seams;
  return h;
}

HeaderRecord HeaderRecord::from_json(const nlohmann::json& j, const std::string& where) {
  TS_CHECK(j.is_object(), where << ": the header must be an object, got " << json_brief(j));
  const auto schema = j.find(kSchema);
  TS_CHECK(schema != j.end() && *schema == kTraceFormat,
           where << ": field " << kSchema << " must be \"" << kTraceFormat << "\", got "
                 << (schema != j.end() ? json_brief(*schema) : std::string("nothing")));
  const auto version = j.find(kVersion);
  TS_CHECK(version != j.end() && version->is_number_integer(), where << ": field " << kVersion << " must be an integer");
  const auto v = json_int_in(*version, kTraceMinVersion, kTraceVersion);
  TS_CHECK(v, where << ": field " << kVersion << " is " << json_brief(*version) << ", this build reads versions " << kTraceMinVersion
                    << " to " << kTraceVersion);
  const auto algorithm = j.find(kAlgorithm);
  TS_CHECK(algorithm != j.end() && algorithm->is_string(), where << ": field " << kAlgorithm << " must be a string");
  HeaderRecord h;
  h.version = *v;
  h.algorithm = algorithm->get<std::string>();
  h.backend = read_string(j, kBackend, where);
  h.verify_kind = read_string(j, kVerifyKind, where);
  h.config = read_object(j, kConfig, where);
  h.model = read_object(j, kModel, where);
  h.vocab = read_vocab(j, where);
  h.seams = read_object(j, kSeams, where);
  return h;
}

int32_t HeaderRecord::prompt_length() const {
  const auto it = config.find(kPrompt);
  return it != config.end() && it->is_array() ? static_cast<int32_t>(std::min<size_t>(it->size(), INT32_MAX)) : 0;
}

JsonObjectReader HeaderRecord::config_reader(const std::string& origin) const {
  TS_CHECK(!config.is_null(), origin << ": header: missing field " << kConfig);
  return JsonObjectReader(config, origin + ": header", kConfig);
}

bool HeaderRecord::is_provenance(std::string_view field) { return field == kBackend || field == kSeams || field == kModel || field == kVocab; }

}  // namespace triescope
