// A toy drafting algorithm with its own verify kind and device verifier, to
// show (and test) that adding one touches only its own files:
//  - toy_drafting.cpp: the algorithm "toy_guess" (spec and decoder), which
//    drafts its guess of the next-but-one token and verifies it;
//  - toy_verify_kind.cpp: the verify kind "toy_guess" (reader, rows,
//    summary, acceptance series);
//  - toy_verify.cu / toy_verify.cuh / toy_device_verifier.cpp: its verifier
//    as a kernel on the host runtime, registered as the cuda backend's
//    device verifier for the kind (built when the host runtime is).
#pragma once
#include <cstdint>

#include "core/model/model.h"

namespace triescope::toy {

inline constexpr const char* kToyGuessKind = "toy_guess";

// Whether the target's greedy token at `row` (argmax_row's tie rule: the
// lowest id) is `guess`. The decoder's CPU reference is argmax_row.
class ToyGuessVerifier {
 public:
  virtual ~ToyGuessVerifier() = default;
  virtual bool verify(const Logits& logits, int32_t row, int32_t guess) = 0;
};

// How often a device toy verifier has run in this process (toy_device_verifier.cpp).
int64_t toy_device_verifier_calls();

}  // namespace triescope::toy
