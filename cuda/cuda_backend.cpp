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
  // Speculative and DSBD samples hold a draft model too: refuse one without
  // a CUDA twin here, before anything runs (run_sample swaps it through
  // s.draft_to_backend).
  const bool has_draft = s.algorithm == "speculative" || s.algorithm == "dsbd";
  try {
    if (has_draft && dynamic_cast<const SyntheticModel*>(s.model.get())) {
      const json& d = s.raw.at("draft_model");
      const std::string type = d.is_object() ? d.value("type", std::string("?")) : std::string("?");
      TS_CHECK(type == "synthetic", "cuda backend: draft_model type \"" << type
                                        << "\" has no CUDA implementation yet (this build runs \"synthetic\" on the GPU)");
      s.draft_to_backend = [](const Model& m) { return model_to_cuda(m); };
    }
    s.model = model_to_cuda(*s.model);
    s.options.dsbd_verifier = make_dsbd_verifier(VerifyExec::device);
    s.options.speculative_verifier = make_speculative_verifier(VerifyExec::device);
    s.options.lookahead_verifier = make_lookahead_verifier(VerifyExec::device);
  } catch (const Error& e) {
    TS_FAIL(s.path << ": " << e.what());
  }
  s.options.backend = kBackendName;
  // The trie decoder's mask rows come from the device builder, so the trace
  // records what the GPU built (the batch layout's rows are still host-built).
  s.options.make_mask = [] { return std::make_unique<IncrementalAncestorMask>(); };
}

}  // namespace triescope::cuda
