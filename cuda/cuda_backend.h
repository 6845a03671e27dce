// The `cuda` backend as the CLI and tests select it: swaps a sample's model
// for its CUDA twin and marks its traces "backend": "cuda". Plain C++ header.
#pragma once
#include <memory>
#include <string>

#include "core/decode/run_sample.h"

namespace triescope::cuda {

inline constexpr const char* kBackendName = "cuda";

// The CUDA twin of a CPU model. Throws Error naming the model type when it has
// no CUDA implementation yet (only "synthetic" has one), or when no device is
// usable.
std::unique_ptr<Model> model_to_cuda(const Model& cpu_model);

// Replaces s.model by model_to_cuda(*s.model) and sets s.options.backend.
// Beam algorithms only (trie_beam_search, batch_beam_search); others are
// refused with a named error.
void sample_use_cuda(Sample& s);

}  // namespace triescope::cuda
