#include <map>
#include <sstream>

#include "core/analysis/verify_kind.h"
#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/algorithm.h"
#include "core/decode/verifier_set.h"
#include "core/trace/trace.h"

namespace triescope {

namespace {
// Function-local: registrars in other files run during static initialisation.
std::map<std::string, VerifyKindSpec, std::less<>>& registry() {
  static std::map<std::string, VerifyKindSpec, std::less<>> r;
  return r;
}
}  // namespace

void verify_kind_register(VerifyKindSpec spec) {
  TS_CHECK(!spec.name.empty(), "verify kind registry: a spec without a name");
  TS_CHECK(spec.read_verify && spec.accumulate && spec.rows && spec.summary && spec.narrate,
           "verify kind registry: " << spec.name << " needs read_verify, accumulate, rows, summary and narrate");
  TS_CHECK(!registry().count(spec.name), "verify kind registry: " << spec.name << " is registered twice");
  std::string name = spec.name;
  registry().emplace(std::move(name), std::move(spec));
}

const VerifyKindSpec* verify_kind_find(std::string_view name) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const VerifyKindSpec*> verify_kinds() {
  std::vector<const VerifyKindSpec*> out;
  for (const auto& [name, spec] : registry()) out.push_back(&spec);
  return out;
}

std::string verify_kind_names() {
  std::ostringstream os;
  for (const VerifyKindSpec* k : verify_kinds()) os << (os.tellp() > 0 ? ", " : "") << k->name;
  return os.tellp() > 0 ? os.str() : std::string("none");
}

std::string trace_verify_kind(const nlohmann::json& header) {
  const int64_t version = header.contains("version") ? json_int_in(header["version"], 0, INT32_MAX).value_or(0) : 0;
  const char* field = version >= 2 ? "verify_kind" : "algorithm";
  const auto it = header.find(field);
  if (it == header.end() || !it->is_string()) return "";
  if (version >= 2) return it->get<std::string>();
  const AlgorithmSpec* algorithm = algorithm_find(it->get_ref<const std::string&>());
  return algorithm ? algorithm->verify_kind : std::string();
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
