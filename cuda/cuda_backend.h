// The `cuda` backend as the CLI and tests select it: swaps a sample's models
// for their CUDA twins, installs the device verifiers and marks its traces
// "backend": "cuda". Plain C++ header.
#pragma once
#include <memory>
#include <string>

#include "core/decode/run_sample.h"

namespace triescope {
class DsbdLayerVerifier;
class SpeculativeVerifier;
class LookaheadVerifier;
}  // namespace triescope

namespace triescope::cuda {

inline constexpr const char* kBackendName = "cuda";

// The CUDA twin of a CPU model. Throws Error naming the model type when it has
// no CUDA implementation yet (only "synthetic" has one), or when no device is
// usable.
std::unique_ptr<Model> model_to_cuda(const Model& cpu_model);

// Where the verifiers run: on the device, or (CPU tests only) the same
// block algorithm on the host with a block of one thread.
enum class VerifyExec { device, host_twin };

// DSBD layer verification (Algorithm 1 lines 13-29) and speculative chain
// verification: cuda/dsbd_verify.h. Device: throws when no device is usable.
std::shared_ptr<DsbdLayerVerifier> make_dsbd_verifier(VerifyExec exec);
std::shared_ptr<SpeculativeVerifier> make_speculative_verifier(VerifyExec exec);
// Lookahead verification (argmax rows + longest matching path): cuda/lookahead_verify.h.
std::shared_ptr<LookaheadVerifier> make_lookahead_verifier(VerifyExec exec);

// Replaces s.model (and a speculative / DSBD sample's draft model) by its
// CUDA twin, installs the device mask builder and verifiers and sets
// s.options.backend. Every algorithm is accepted; a model without a CUDA
// twin or a missing device is refused with an Error naming the file.
void sample_use_cuda(Sample& s);

}  // namespace triescope::cuda
