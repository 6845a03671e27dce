#include "cuda/device_verifiers.h"

#include <map>

#include "core/analysis/verify_kind.h"
#include "core/common/error.h"

namespace triescope::cuda {

namespace {
// Function-local: registrars in other files run during static initialisation.
std::map<std::string, DeviceVerifierSpec>& registry() {
  static std::map<std::string, DeviceVerifierSpec> r;
  return r;
}
}  // namespace

void device_verifier_register(DeviceVerifierSpec spec) {
  TS_CHECK(!spec.kind.empty() && spec.install, "device verifier registry: a spec needs a kind and install");
  TS_CHECK(!registry().count(spec.kind), "device verifier registry: verify kind " << spec.kind << " has two device verifiers");
  std::string kind = spec.kind;
  registry().emplace(std::move(kind), std::move(spec));
}

std::vector<const DeviceVerifierSpec*> device_verifiers() {
  std::vector<const DeviceVerifierSpec*> out;
  for (const auto& [kind, spec] : registry()) out.push_back(&spec);
  return out;
}

void verifiers_install(VerifierSet& set, VerifyExec exec) {
  for (const DeviceVerifierSpec* d : device_verifiers()) d->install(set, exec);
  verifier_set_check(set);
}

}  // namespace triescope::cuda
