// The fields of one object of a typed trace record, read for its from_json
// (the verify payloads: speculative_chain_verify_record.h,
// dsbd_layers_verify_record.h, lookahead_candidates_verify_record.h). A
// missing or mistyped field is an Error naming the record and the field's
// path: "t.jsonl:4: verify: field layers[1].drafts[0].u must be a number, got \"x\""
// (docs/trace-format.md). Fields it does not know are ignored, as every
// reader does.
#pragma once
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope {

class RecordFields {
 public:
  // `j` must be an object: "<where> must be an object, got ...".
  RecordFields(const nlohmann::json& j, std::string where);

  // Present and not null.
  bool has(const char* key) const;
  // Whether the field is null; a missing field is an error (a field the
  // format writes as null when it has nothing to say).
  bool null(const char* key) const;
  int64_t integer(const char* key, int64_t lo, int64_t hi) const;
  int32_t int32(const char* key, int32_t lo = 0, int32_t hi = INT32_MAX) const;
  double number(const char* key) const;
  bool flag(const char* key) const;
  std::string string(const char* key) const;
  // A string that must be one of `names`: its index there.
  size_t one_of(const char* key, const std::vector<std::string>& names) const;
  // An array of integers in [lo, hi].
  std::vector<int32_t> ints(const char* key, int32_t lo = 0, int32_t hi = INT32_MAX) const;
  // The size of the array field `key`, and its entry i as an object.
  size_t size(const char* key) const;
  RecordFields entry(const char* key, size_t i) const;
  // The object field `key`.
  RecordFields object(const char* key) const;
  // An array of arrays of integers in [lo, hi].
  std::vector<std::vector<int32_t>> int_lists(const char* key, int32_t lo = 0, int32_t hi = INT32_MAX) const;
  // The record's `kind` field, when present, must be `kind` (a v1 trace's
  // verify object has none).
  void kind_check(const char* kind) const;
  // "layers[1].drafts[0].u": the path of `key` in this object.
  std::string field(const std::string& key) const;

 private:
  RecordFields(const nlohmann::json& j, std::string where, std::string path);
  const nlohmann::json& get(const char* key) const;  // throws when missing
  const nlohmann::json& array(const char* key) const;
  std::vector<int32_t> ints_at(const nlohmann::json& a, const std::string& path, int32_t lo, int32_t hi) const;

  const nlohmann::json& j_;
  std::string where_;
  std::string path_;  // this object's path in the record ("" at the top)
};

}  // namespace triescope
