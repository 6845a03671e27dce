// The toy drafting algorithm's device verifier (toy_drafting.h): the kernel
// of toy_verify.cu on the cuda backend, registered for the verify kind
// "toy_guess" so the backend installs it like its own.
#include <atomic>

#include "cuda/device_verifiers.h"
#include "tests/registry/toy_drafting.h"
#include "tests/registry/toy_verify.cuh"

namespace triescope::toy {
namespace {

std::atomic<int64_t> g_calls{0};

class DeviceToyGuessVerifier final : public ToyGuessVerifier {
 public:
  bool verify(const Logits& logits, int32_t row, int32_t guess) override {
    ++g_calls;
    return toy_argmax_device(logits.row(row), logits.vocab) == guess;
  }
};

std::shared_ptr<ToyGuessVerifier> make(cuda::VerifyExec) { return std::make_shared<DeviceToyGuessVerifier>(); }

}  // namespace

int64_t toy_device_verifier_calls() { return g_calls.load(); }

TRIESCOPE_REGISTER_DEVICE_VERIFIER(cuda::device_verifier<ToyGuessVerifier>(kToyGuessKind, make));

}  // namespace triescope::toy
