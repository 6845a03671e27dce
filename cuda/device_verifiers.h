// The cuda backend's device verifiers by verify kind: each verifier's file
// registers how to build it (TRIESCOPE_REGISTER_DEVICE_VERIFIER), and the
// backend installs every registered one (verifiers_install) without naming a
// kind. Adding a kind with a device verifier adds a registration here, not a
// line in cuda_backend.cpp.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/decode/verifier_set.h"
#include "cuda/verify_exec.h"

namespace triescope::cuda {

struct DeviceVerifierSpec {
  std::string kind;  // the verify kind (core/analysis/verify_kind.h) it verifies
  // Builds the verifier and puts it into the set under `kind`, as the type
  // the kind's decoder looks up.
  std::function<void(VerifierSet& set, VerifyExec exec)> install;
};

// A spec whose install puts make(exec) under `kind` as a T.
template <class T>
DeviceVerifierSpec device_verifier(std::string kind, std::function<std::shared_ptr<T>(VerifyExec)> make) {
  return {kind, [kind, make = std::move(make)](VerifierSet& set, VerifyExec exec) { set.put<T>(kind, make(exec)); }};
}

// Adds a spec; throws Error when its kind already has one or install is missing.
void device_verifier_register(DeviceVerifierSpec spec);
std::vector<const DeviceVerifierSpec*> device_verifiers();
// Installs every registered device verifier into `set`, then checks each
// against its kind's spec (verifier_set_check): a verifier for an
// unregistered kind or of another type than its kind accepts is an Error.
void verifiers_install(VerifierSet& set, VerifyExec exec);

struct DeviceVerifierRegistrar {
  explicit DeviceVerifierRegistrar(DeviceVerifierSpec spec) { device_verifier_register(std::move(spec)); }
};

}  // namespace triescope::cuda

#define TRIESCOPE_DEVICE_VERIFIER_CAT2(a, b) a##b
#define TRIESCOPE_DEVICE_VERIFIER_CAT(a, b) TRIESCOPE_DEVICE_VERIFIER_CAT2(a, b)
// At namespace scope in the verifier's file: TRIESCOPE_REGISTER_DEVICE_VERIFIER(device_verifier<T>(kind, make));
#define TRIESCOPE_REGISTER_DEVICE_VERIFIER(spec) \
  static const ::triescope::cuda::DeviceVerifierRegistrar TRIESCOPE_DEVICE_VERIFIER_CAT(triescope_device_verifier_registrar_, __LINE__)(spec)
