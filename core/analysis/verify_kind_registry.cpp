#include "core/analysis/verify_kind.h"
#include "core/common/error.h"
#include "core/common/spec_registry.h"
#include "core/config/json_reader.h"
#include "core/decode/algorithm.h"
#include "core/decode/verifier_set.h"
#include "core/trace/header_record.h"
#include "core/trace/trace.h"

namespace triescope {

namespace {
bool verify_kind_complete(const VerifyKindSpec& k) { return k.read_verify && k.accumulate && k.rows && k.summary && k.narrate; }

SpecRegistry<VerifyKindSpec>& registry() {
  static SpecRegistry<VerifyKindSpec> r("verify kind registry", "read_verify, accumulate, rows, summary and narrate", verify_kind_complete);
  return r;
}
}  // namespace

void verify_kind_register(VerifyKindSpec spec) { registry().add(std::move(spec)); }

const VerifyKindSpec* verify_kind_find(std::string_view name) { return registry().find(name); }

std::vector<const VerifyKindSpec*> verify_kinds() { return registry().all(); }

std::string verify_kind_names() { return registry().names(); }

std::string trace_verify_kind(const HeaderRecord& header) {
  if (header.version >= 2) return header.verify_kind;
  const AlgorithmSpec* algorithm = algorithm_find(header.algorithm);
  return algorithm ? algorithm->verify_kind : std::string();
}

std::string trace_verify_kind(const nlohmann::json& header) {
  try {
    return trace_verify_kind(HeaderRecord::from_json(header, "header"));
  } catch (const Error&) {
    return "";  // a header this build cannot read names no kind (its reader refuses it by name)
  }
}

const VerifyKindSpec* verify_kind_of_header(const nlohmann::json& header, const std::string& origin) {
  const std::string kind = trace_verify_kind(header);
  if (kind.empty()) return nullptr;
  const VerifyKindSpec* spec = verify_kind_find(kind);
  TS_CHECK(spec, origin << ": header verify_kind: unknown verification kind \"" << kind << "\" (registered: " << verify_kind_names() << ")");
  return spec;
}

void verifier_set_check(const VerifierSet& set) {
  for (const std::string& kind : set.kinds()) {
    const VerifyKindSpec* spec = verify_kind_find(kind);
    TS_CHECK(spec, "verifier set: unknown verification kind \"" << kind << "\" (registered: " << verify_kind_names() << ")");
    TS_CHECK(set.type_of(kind) == spec->verifier, "verifier set: verify kind \"" << kind << "\" accepts a " << type_display_name(spec->verifier)
                                                                                   << ", got a " << type_display_name(set.type_of(kind)));
  }
}

}  // namespace triescope
