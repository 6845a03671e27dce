// The `header` record: the first record of a trace, naming its format and
// version, the algorithm and backend, the decode's full config, the model's
// description, the kind of its verify objects and the vocabulary
// (docs/trace-format.md, "header"; $defs/header in
// docs/trace-format.schema.json). Its field names are written and read here
// only: the recorder writes a HeaderRecord, readers parse one (ctest
// trace_field_literals).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

struct HeaderRecord {
  int64_t version = kTraceVersion;  // written: kTraceVersion; read: in [kTraceMinVersion, kTraceVersion]
  std::string algorithm;            // a registered algorithm, or "external"
  std::string backend;              // "cpu-reference", "cuda", ... ("" when a read header has none)
  nlohmann::json config = nlohmann::json::object();  // the decode's config as its spec parsed it (open; null when a read header has none)
  nlohmann::json model = nlohmann::json::object();   // the model's description (open; "type" and its own fields; null likewise)
  std::string verify_kind;          // the kind of every verify object; "" when it verifies nothing (and in v1)
  std::vector<std::string> vocab;   // [vocab size] one label per token id; empty when the model has none
  // Where the backend ran each seam the sample uses, {"mask": "device",
  // "constraint": "host", ...} (BackendSupport::to_json, core/decode/backend.h);
  // null: not recorded (the CPU reference runs every seam on the host).
  nlohmann::json seams = nullptr;
  // A further optional member is one member here and one line each in
  // to_json and from_json.

  bool operator==(const HeaderRecord&) const = default;

  // The whole record, with its kind and schema; verify_kind and vocab are
  // left out when empty, config and model when null.
  nlohmann::json to_json() const;
  // A recorded header; `where` ("t.jsonl:1") names it in errors:
  // "t.jsonl:1: field version is 9, this build reads versions 1 to 2".
  // Checks the format name, the version range and each field's type; fields
  // it does not know are ignored (as every reader does).
  static HeaderRecord from_json(const nlohmann::json& j, const std::string& where);

  // The config's prompt length (config.prompt's entries; 0 when it has none).
  int32_t prompt_length() const;
  // A reader of the config whose errors name `origin`, the header and the
  // field: "t.jsonl: header: config.beam.num_beams must be ..."; a header
  // without a config is "t.jsonl: header: missing field config".
  JsonObjectReader config_reader(const std::string& origin) const;
  // Whether a top-level header field is provenance, never compared by
  // trace_diff: where the decode ran (backend, seams), the source of the
  // logits (model) and the token labels (vocab) (core/trace/trace_diff.h).
  static bool is_provenance(std::string_view field);
};

}  // namespace triescope
