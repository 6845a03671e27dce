#include "core/config/json_reader.h"

#include <algorithm>
#include <climits>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/common/text_excerpt.h"

namespace triescope {

namespace {

// The DOM builder json_parse_text parses through: nlohmann's own builder
// would take a key given twice silently (the last value wins, so two readers
// of one file could disagree on what it says); this one refuses it, and it
// refuses a container opened past kJsonMaxDepth before anything deeper is
// built. The parser's own errors arrive here with their position instead of
// as exceptions (a number overflow, 406, is out_of_range, not parse_error).
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(json& root) : root_(root) {}
  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(v); }
  bool string(json::string_t& v) { return put(std::move(v)); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool key(json::string_t& k) {
    auto [it, fresh] = stack_.back()->emplace(std::move(k), nullptr);
    if (!fresh) {
      duplicate_ = "key \"" + text_excerpt(it.key(), 60) + "\" given twice in " + path_of_top();
      return false;
    }
    slot_ = &it.value();
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    byte_ = position;  // characters read, the bad token included
    return false;
  }
  bool too_deep() const { return too_deep_; }
  const std::string& duplicate() const { return duplicate_; }
  const std::string& error() const { return error_; }
  size_t byte() const { return byte_; }

 private:
  // Where the next value goes: the root, the end of the open array, or the
  // member whose key came last.
  template <class V>
  json* place(V&& v) {
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.emplace_back(std::forward<V>(v));
      return &top.back();
    }
    *slot_ = json(std::forward<V>(v));
    return slot_;
  }
  template <class V>
  bool put(V&& v) {
    place(std::forward<V>(v));
    return true;
  }
  bool open(json::value_t t) {
    too_deep_ = static_cast<int>(stack_.size()) + 1 > kJsonMaxDepth;
    if (too_deep_) return false;
    stack_.push_back(place(t));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  // The open object's place in the document, as a dotted path ("the top
  // level" for the root): found from the parents only when an error needs it.
  std::string path_of_top() const {
    std::string path;
    for (size_t d = 1; d < stack_.size(); ++d) {
      const json& parent = *stack_[d - 1];
      if (parent.is_array()) {
        for (size_t i = 0; i < parent.size(); ++i)
          if (&parent[i] == stack_[d]) path += "[" + std::to_string(i) + "]";
      } else {
        for (auto it = parent.begin(); it != parent.end(); ++it)
          if (&it.value() == stack_[d]) path += (path.empty() ? "" : ".") + text_excerpt(it.key(), 60);
      }
    }
    return path.empty() ? std::string("the top-level object") : "object " + path;
  }

  json& root_;
  std::vector<json*> stack_;
  json* slot_ = nullptr;
  bool too_deep_ = false;
  std::string duplicate_;
  std::string error_;
  size_t byte_ = 0;
};

// Offset of the bracket that opens level kJsonMaxDepth + 1 (strings skipped).
size_t too_deep_offset(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kJsonMaxDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

}  // namespace

json json_parse_text(std::string_view text, const std::string& origin, size_t first_line) {
  json out;
  StrictDomBuilder sax(out);
  if (json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json, true, false)) return out;
  // A duplicate key is found without its position: the message names the
  // object instead of a column (and the line, for a one-line record).
  const bool one_line = text.find('\n') == std::string_view::npos;
  TS_CHECK(sax.duplicate().empty(), origin << (one_line ? ":" + std::to_string(first_line) : std::string()) << ": " << sax.duplicate());
  const size_t at = sax.too_deep() ? too_deep_offset(text) : sax.byte() > 0 ? sax.byte() - 1 : text.size();
  size_t line = first_line, col = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  TS_FAIL(origin << ":" << line << ":" << col << ": "
                 << (sax.too_deep() ? "JSON nested deeper than " + std::to_string(kJsonMaxDepth) + " levels"
                                    : "malformed JSON: " + sax.error()));
}

namespace json_skim_detail {

size_t skip_ws(std::string_view text, size_t i) {
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  return i;
}

// Brackets are counted, not matched, and scalars are taken as they stand:
// the skim finds where a value ends; json_parse_text judges it.
size_t skip_value(std::string_view text, size_t i) {
  constexpr size_t npos = std::string_view::npos;
  if (i >= text.size()) return npos;
  int64_t depth = 0;
  do {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      if (i >= text.size()) return npos;
      ++i;
    } else if (c == '{' || c == '[') {
      ++depth;
      ++i;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) return npos;
      ++i;
    } else if (depth > 0) {
      ++i;
    } else {
      while (i < text.size() && text[i] != ',' && text[i] != '}' && text[i] != ']' && text[i] != ' ' && text[i] != '\t' &&
             text[i] != '\r' && text[i] != '\n')
        ++i;
    }
  } while (depth > 0 && i < text.size());
  return depth == 0 ? i : npos;
}

}  // namespace json_skim_detail

json json_load_file(const std::string& path) { return json_parse_text(file_read_all(path), path); }

std::optional<int64_t> json_int_in(const json& v, int64_t lo, int64_t hi) {
  int64_t x;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else {
    return std::nullopt;
  }
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

std::string json_brief(const json& v) {
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " fields";
  std::string s = v.is_array() && v.size() > 8 ? "" : v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (v.is_array() && (s.empty() || s.size() > 80)) return "an array of " + std::to_string(v.size());
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

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
  const auto x = json_int_in(v, lo, hi);
  TS_CHECK(x, where(key) << (v.is_number_integer() ? " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"
                                                    : std::string(" must be an integer"))
                         << ", got " << json_brief(v));
  return *x;
}

int64_t JsonObjectReader::get_int(const std::string& key, int64_t lo, int64_t hi, int64_t dflt) {
  return has(key) ? get_int(key, lo, hi) : dflt;
}

double JsonObjectReader::get_double(const std::string& key, double lo, double hi) {
  const json& v = raw(key);
  TS_CHECK(v.is_number(), where(key) << " must be a number, got " << json_brief(v));
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
  TS_CHECK(v.is_boolean(), where(key) << " must be true or false, got " << json_brief(v));
  return v.get<bool>();
}

std::string JsonObjectReader::get_string(const std::string& key) {
  const json& v = raw(key);
  TS_CHECK(v.is_string(), where(key) << " must be a string, got " << json_brief(v));
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
    const auto x = json_int_in(v[i], std::max<int64_t>(lo, INT32_MIN), std::min<int64_t>(hi, INT32_MAX));
    TS_CHECK(x, where(key) << "[" << i << "]"
                           << (v[i].is_number_integer() ? " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"
                                                        : std::string(" must be an integer"))
                           << ", got " << json_brief(v[i]));
    out.push_back(static_cast<int32_t>(*x));
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
