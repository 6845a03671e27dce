// The one comparison of two traces; `triescope diff` and the GUI's diff mode
// both call it. Structure (ids, tokens, bits, slots, positions) compares
// exactly, floating-point numbers within a relative/absolute tolerance.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace_index.h"

namespace triescope {

// One step of a field path: an object member (key) or an array element (index).
struct TracePathStep {
  std::string key;     // empty for an array element
  int64_t index = -1;  // -1 for an object member
  bool operator==(const TracePathStep&) const = default;
};

struct TraceDivergence {
  int64_t step = -1;      // -1: header or summary
  size_t record = 0;      // index of the record in both traces
  std::string kind;       // record kind (header, step, gc, keyframe, summary)
  std::string phase;      // step phase, when the record has one
  std::string field;      // dotted path inside the record, e.g. forward.mask.rows[1] (for people)
  std::vector<TracePathStep> path;  // the same path as data: {forward}, {mask}, {rows}, [1] (for code)
  int64_t index = -1;     // bit (column) index for mask rows, else -1
  std::string a, b;       // the two values as text
  std::string describe() const;
};

struct TraceDiffOptions {
  double tolerance = 1e-6;  // |a - b| <= tol * max(1, |a|, |b|) for non-integers
};

// Whether `key` (a member of an object in a record of `record_kind`;
// `top_level`: of the record itself) is provenance, never compared: where the
// decode ran and where its inputs came from, not what it decoded. "seconds"
// anywhere (wall time); in the header: "backend", "model" (the source of the
// logits: type, path, device, hf_* fields...) and "vocab" (token labels: the
// token ids are compared in every record), and at any depth a field naming a
// file ("path", "file", "dir", "origin", "*_path", "*_file", "*_dir"). The
// rest of the header (schema, version, algorithm, config with any content
// hash, verify_kind) is the decode's config, compared like every record after
// it (docs/trace-format.md).
bool trace_field_is_provenance(const std::string& record_kind, bool top_level, const std::string& key);

// Provenance fields (above) are not compared.
std::optional<TraceDivergence> trace_diff(const std::vector<nlohmann::json>& a, const std::vector<nlohmann::json>& b,
                                          const TraceDiffOptions& opt = {});

// Every divergence (up to `limit`), for the GUI's marks.
std::vector<TraceDivergence> trace_diff_all(const std::vector<nlohmann::json>& a, const std::vector<nlohmann::json>& b,
                                            const TraceDiffOptions& opt = {}, size_t limit = 100000);
// The same over records read one at a time (two streamed files: memory
// bounded by one record of each, whatever the traces' size).
std::vector<TraceDivergence> trace_diff_all(const TraceRecords& a, const TraceRecords& b, const TraceDiffOptions& opt = {},
                                            size_t limit = 100000);

}  // namespace triescope
