#include "core/trace/record_fields.h"

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace triescope {

using nlohmann::json;

RecordFields::RecordFields(const json& j, std::string where) : RecordFields(j, std::move(where), "") {}

RecordFields::RecordFields(const json& j, std::string where, std::string path) : j_(j), where_(std::move(where)), path_(std::move(path)) {
  if (path_.empty()) TS_CHECK(j.is_object(), where_ << " must be an object, got " << json_brief(j));
  else TS_CHECK(j.is_object(), where_ << ": field " << path_ << " must be an object, got " << json_brief(j));
}

std::string RecordFields::field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

bool RecordFields::has(const char* key) const {
  const auto it = j_.find(key);
  return it != j_.end() && !it->is_null();
}

const json& RecordFields::get(const char* key) const {
  const auto it = j_.find(key);
  TS_CHECK(it != j_.end(), where_ << ": field " << field(key) << " is missing");
  return *it;
}

bool RecordFields::null(const char* key) const { return get(key).is_null(); }

int64_t RecordFields::integer(const char* key, int64_t lo, int64_t hi) const {
  const json& v = get(key);
  TS_CHECK(v.is_number_integer(), where_ << ": field " << field(key) << " must be an integer, got " << json_brief(v));
  const auto x = json_int_in(v, lo, hi);
  TS_CHECK(x, where_ << ": field " << field(key) << " must be in [" << lo << ", " << hi << "], got " << json_brief(v));
  return *x;
}

int32_t RecordFields::int32(const char* key, int32_t lo, int32_t hi) const { return static_cast<int32_t>(integer(key, lo, hi)); }

double RecordFields::number(const char* key) const {
  const json& v = get(key);
  TS_CHECK(v.is_number(), where_ << ": field " << field(key) << " must be a number, got " << json_brief(v));
  return v.get<double>();
}

bool RecordFields::flag(const char* key) const {
  const json& v = get(key);
  TS_CHECK(v.is_boolean(), where_ << ": field " << field(key) << " must be true or false, got " << json_brief(v));
  return v.get<bool>();
}

std::string RecordFields::string(const char* key) const {
  const json& v = get(key);
  TS_CHECK(v.is_string(), where_ << ": field " << field(key) << " must be a string, got " << json_brief(v));
  return v.get<std::string>();
}

size_t RecordFields::one_of(const char* key, const std::vector<std::string>& names) const {
  const json& v = get(key);
  for (size_t i = 0; i < names.size(); ++i)
    if (v.is_string() && v.get_ref<const std::string&>() == names[i]) return i;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "\"" : ", \"") + n + "\"";
  TS_FAIL(where_ << ": field " << field(key) << " must be one of " << list << ", got " << json_brief(v));
}

const json& RecordFields::array(const char* key) const {
  const json& v = get(key);
  TS_CHECK(v.is_array(), where_ << ": field " << field(key) << " must be an array, got " << json_brief(v));
  return v;
}

std::vector<int32_t> RecordFields::ints_at(const json& a, const std::string& path, int32_t lo, int32_t hi) const {
  TS_CHECK(a.is_array(), where_ << ": field " << path << " must be an array, got " << json_brief(a));
  std::vector<int32_t> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const auto x = a[i].is_number_integer() ? json_int_in(a[i], lo, hi) : std::nullopt;
    TS_CHECK(x, where_ << ": field " << path << "[" << i << "] must be an integer in [" << lo << ", " << hi << "], got " << json_brief(a[i]));
    out.push_back(static_cast<int32_t>(*x));
  }
  return out;
}

std::vector<int32_t> RecordFields::ints(const char* key, int32_t lo, int32_t hi) const { return ints_at(get(key), field(key), lo, hi); }

std::vector<std::vector<int32_t>> RecordFields::int_lists(const char* key, int32_t lo, int32_t hi) const {
  const json& a = array(key);
  std::vector<std::vector<int32_t>> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(ints_at(a[i], field(key) + "[" + std::to_string(i) + "]", lo, hi));
  return out;
}

void RecordFields::kind_check(const char* kind) const {
  if (!j_.contains("kind")) return;
  TS_CHECK(string("kind") == kind, where_ << ": field " << field("kind") << " must be \"" << kind << "\", got " << json_brief(j_["kind"]));
}

size_t RecordFields::size(const char* key) const { return array(key).size(); }

RecordFields RecordFields::entry(const char* key, size_t i) const {
  return RecordFields(array(key).at(i), where_, field(key) + "[" + std::to_string(i) + "]");
}

RecordFields RecordFields::object(const char* key) const { return RecordFields(get(key), where_, field(key)); }

}  // namespace triescope
