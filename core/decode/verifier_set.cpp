#include "core/decode/verifier_set.h"

#include <cxxabi.h>

#include <cstdlib>

#include "core/common/error.h"

namespace triescope {

std::string type_display_name(std::type_index t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : t.name();
  std::free(d);
  return out;
}

const VerifierSet::Entry* VerifierSet::entry(std::string_view kind) const {
  const auto it = entries_.find(kind);
  return it == entries_.end() ? nullptr : &it->second;
}

std::type_index VerifierSet::type_of(std::string_view kind) const {
  const Entry* e = entry(kind);
  return e ? e->type : std::type_index(typeid(void));
}

std::vector<std::string> VerifierSet::kinds() const {
  std::vector<std::string> out;
  for (const auto& [kind, e] : entries_) out.push_back(kind);
  return out;
}

void VerifierSet::type_mismatch(const char* what, std::string_view name, std::type_index have, std::type_index want) {
  TS_FAIL("verifier set: " << what << " \"" << name << "\" holds a " << type_display_name(have) << ", its decoder needs a "
                           << type_display_name(want));
}

}  // namespace triescope
