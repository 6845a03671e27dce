// Strict reading of JSON objects: every error names the file and the dotted
// field path ("samples/x.json: beam.num_beams must be >= 1, got 0"), and
// keys nobody asked for are rejected by finish().
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope {

using json = nlohmann::json;

// Containers nested deeper than this are refused while parsing, so nothing
// deep is ever built: copying, printing or destroying a JSON value recurses
// once per level, and 80,000 levels overflow the stack.
inline constexpr int kJsonMaxDepth = 64;

// Parses a whole file. Every error -- syntax, invalid UTF-8, a number outside
// double range, nesting deeper than kJsonMaxDepth -- names the file, line and
// column. `first_line` numbers the text's first line (a JSON Lines record).
json json_load_file(const std::string& path);
json json_parse_text(std::string_view text, const std::string& origin, size_t first_line = 1);

// The top-level members of the JSON object in `text`, found without building
// it (what indexing a big trace needs: each record's kind and step): calls
// on_member(key, value) with both as raw JSON text (the key with its quotes).
// Returns false when `text` is not an object this skim can walk; it checks
// only the structure it walks, so a caller that uses a record parses it
// with json_parse_text, which names any error.
template <class OnMember>
bool json_skim_members(std::string_view text, OnMember on_member);

// The integer `v` holds, when it is one within [lo, hi]; nullopt for anything
// else (a float, a string, an unsigned beyond int64, out of range). Readers
// check every integer this way before narrowing it.
std::optional<int64_t> json_int_in(const json& v, int64_t lo, int64_t hi);
// `v` for an error message: scalars as JSON (long strings cut), containers by
// kind and size, so a message never prints a whole file.
std::string json_brief(const json& v);

namespace json_skim_detail {
// One JSON value starting at text[i]: returns the offset past it, or npos.
size_t skip_value(std::string_view text, size_t i);
size_t skip_ws(std::string_view text, size_t i);
}  // namespace json_skim_detail

template <class OnMember>
bool json_skim_members(std::string_view text, OnMember on_member) {
  using namespace json_skim_detail;
  constexpr size_t npos = std::string_view::npos;
  size_t i = skip_ws(text, 0);
  if (i >= text.size() || text[i] != '{') return false;
  i = skip_ws(text, i + 1);
  if (i < text.size() && text[i] == '}') return skip_ws(text, i + 1) == text.size();
  for (;;) {
    if (i >= text.size() || text[i] != '"') return false;
    const size_t key_end = skip_value(text, i);
    if (key_end == npos) return false;
    const std::string_view key = text.substr(i, key_end - i);
    i = skip_ws(text, key_end);
    if (i >= text.size() || text[i] != ':') return false;
    const size_t v = skip_ws(text, i + 1);
    const size_t v_end = skip_value(text, v);
    if (v_end == npos) return false;
    on_member(key, text.substr(v, v_end - v));
    i = skip_ws(text, v_end);
    if (i >= text.size()) return false;
    if (text[i] == '}') return skip_ws(text, i + 1) == text.size();
    if (text[i] != ',') return false;
    i = skip_ws(text, i + 1);
  }
}

class JsonObjectReader {
 public:
  // `origin` names the file, `prefix` the field path of this object ("" at top).
  JsonObjectReader(const json& obj, std::string origin, std::string prefix = "");

  bool has(const std::string& key) const;
  const json& raw(const std::string& key);  // marks used; throws when missing
  std::string field(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  std::string where(const std::string& key) const { return origin_ + ": " + field(key); }

  int64_t get_int(const std::string& key, int64_t lo, int64_t hi);
  int64_t get_int(const std::string& key, int64_t lo, int64_t hi, int64_t dflt);
  double get_double(const std::string& key, double lo, double hi);
  double get_double(const std::string& key, double lo, double hi, double dflt);
  bool get_bool(const std::string& key, bool dflt);
  std::string get_string(const std::string& key);
  std::string get_string(const std::string& key, const std::string& dflt);
  std::vector<int32_t> get_int_array(const std::string& key, int64_t lo, int64_t hi);
  JsonObjectReader object(const std::string& key);

  // Throws on any key present in the object that was never read.
  void finish() const;
  const std::string& origin() const { return origin_; }
  const std::string& prefix() const { return prefix_; }  // this object's field path ("" at top)
  const json& object_json() const { return obj_; }       // the object itself

 private:
  const json& obj_;
  std::string origin_;
  std::string prefix_;
  mutable std::set<std::string> used_;
};

}  // namespace triescope
