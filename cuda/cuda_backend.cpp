#include "cuda/cuda_backend.h"

#include "core/common/error.h"
#include "cuda/cuda_synthetic_model.h"
#include "cuda/incremental_ancestor_mask.h"

namespace triescope::cuda {

std::unique_ptr<Model> model_to_cuda(const Model& cpu_model) {
  if (const auto* syn = dynamic_cast<const SyntheticModel*>(&cpu_model)) return std::make_unique<CudaSyntheticModel>(syn->config());
  TS_FAIL("cuda backend: model type \"" << cpu_model.describe().value("type", std::string("?"))
                                        << "\" has no CUDA implementation yet (this build runs \"synthetic\" on the GPU)");
}

void sample_use_cuda(Sample& s) {
  // Only the beam decoders carry DecodeOptions::backend into their traces.
  TS_CHECK(s.algorithm == "trie_beam_search" || s.algorithm == "batch_beam_search",
           s.path << ": cuda backend: algorithm \"" << s.algorithm
                  << "\" is not wired to the cuda backend yet (trie_beam_search, batch_beam_search are)");
  try {
    s.model = model_to_cuda(*s.model);
  } catch (const Error& e) {
    TS_FAIL(s.path << ": " << e.what());
  }
  s.options.backend = kBackendName;
  // The trie decoder's mask rows come from the device builder, so the trace
  // records what the GPU built (the batch layout's rows are still host-built).
  s.options.make_mask = [] { return std::make_unique<IncrementalAncestorMask>(); };
}

}  // namespace triescope::cuda
