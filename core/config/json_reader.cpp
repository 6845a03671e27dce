#include "core/config/json_reader.h"

#include "core/common/error.h"
#include "core/common/file_io.h"

namespace triescope {

json json_parse_text(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into line:column for a person.
    size_t line = 1, col = 1;
    for (size_t i = 0; i < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    TS_FAIL(origin << ":" << line << ":" << col << ": malformed JSON: " << e.what());
  }
}

json json_load_file(const std::string& path) { return json_parse_text(file_read_all(path), path); }

JsonObjectReader::JsonObjectReader(const json& obj, std::string origin, std::string prefix)
    : obj_(obj), origin_(std::move(origin)), prefix_(std::move(prefix)) {
  TS_CHECK(obj_.is_object(), origin_ << ": " << (prefix_.empty() ? std::string("top level") : prefix_)
                                     << " must be a JSON object, got " << obj_.type_name());
}

bool JsonObjectReader::has(const std::string& key) const { return obj_.contains(key); }

const json& JsonObjectReader::raw(const std::string& key) {
  TS_CHECK(obj_.contains(key), origin_ << ": missing field " << field(key));
  used_.insert(key);
  return obj_.at(key);
}

int64_t JsonObjectReader::get_int(const std::string& key, int64_t lo, int64_t hi) {
  const json& v = raw(key);
  TS_CHECK(v.is_number_integer(), where(key) << " must be an integer, got " << v.dump());
  const int64_t x = v.get<int64_t>();
  TS_CHECK(x >= lo && x <= hi, where(key) << " must be in [" << lo << ", " << hi << "], got " << x);
  return x;
}

int64_t JsonObjectReader::get_int(const std::string& key, int64_t lo, int64_t hi, int64_t dflt) {
  return has(key) ? get_int(key, lo, hi) : dflt;
}

double JsonObjectReader::get_double(const std::string& key, double lo, double hi) {
  const json& v = raw(key);
  TS_CHECK(v.is_number(), where(key) << " must be a number, got " << v.dump());
  const double x = v.get<double>();
  TS_CHECK(x >= lo && x <= hi, where(key) << " must be in [" << lo << ", " << hi << "], got " << x);
  return x;
}

double JsonObjectReader::get_double(const std::string& key, double lo, double hi, double dflt) {
  return has(key) ? get_double(key, lo, hi) : dflt;
}

bool JsonObjectReader::get_bool(const std::string& key, bool dflt) {
  if (!has(key)) return dflt;
  const json& v = raw(key);
  TS_CHECK(v.is_boolean(), where(key) << " must be true or false, got " << v.dump());
  return v.get<bool>();
}

std::string JsonObjectReader::get_string(const std::string& key) {
  const json& v = raw(key);
  TS_CHECK(v.is_string(), where(key) << " must be a string, got " << v.dump());
  return v.get<std::string>();
}

std::string JsonObjectReader::get_string(const std::string& key, const std::string& dflt) {
  return has(key) ? get_string(key) : dflt;
}

std::vector<int32_t> JsonObjectReader::get_int_array(const std::string& key, int64_t lo, int64_t hi) {
  const json& v = raw(key);
  TS_CHECK(v.is_array(), where(key) << " must be an array of integers, got " << v.type_name());
  std::vector<int32_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    TS_CHECK(v[i].is_number_integer(), where(key) << "[" << i << "] must be an integer, got " << v[i].dump());
    const int64_t x = v[i].get<int64_t>();
    TS_CHECK(x >= lo && x <= hi, where(key) << "[" << i << "] must be in [" << lo << ", " << hi << "], got " << x);
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

JsonObjectReader JsonObjectReader::object(const std::string& key) {
  return JsonObjectReader(raw(key), origin_, field(key));
}

void JsonObjectReader::finish() const {
  for (const auto& [k, v] : obj_.items())
    TS_CHECK(used_.count(k), origin_ << ": unknown field " << field(k));
}

}  // namespace triescope
