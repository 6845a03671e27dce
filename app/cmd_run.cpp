#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/decode/run_sample.h"
#ifdef TRIESCOPE_WITH_TORCH
#include "core/model/torch/torch_transformer.h"
#endif
#ifdef TRIESCOPE_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace triescope::cli {

int cmd_run(const Args& args) {
  auto p = parse_args(args, {"out", "backend", "prompt"}, {"quiet"});
  TS_CHECK(p.positional.size() == 1, "run: expected one sample file, got " << p.positional.size() << " arguments");
  const std::string backend = p.get("backend", "cpu");
  TS_CHECK(backend == "cpu" || backend == "cuda" || backend == "cuda-emu",
           "run: --backend must be cpu, cuda or cuda-emu, got " << backend);
  Sample s = sample_load(p.positional[0]);
  if (p.has("prompt")) {  // text replaces the sample's prompt ids (needs a model with tokenizer.json)
#ifdef TRIESCOPE_WITH_TORCH
    s.prompt = model_encode_text(*s.model, p.get("prompt"));
    TS_CHECK(!s.prompt.empty(), "run: --prompt encodes to no tokens");
#else
    TS_FAIL("run: --prompt needs a model with a tokenizer; this build has no LibTorch transformer");
#endif
  }
  if (backend != "cpu") {
#ifdef TRIESCOPE_WITH_CUDA
    // One CUDA backend per build: the host runtime's (cuda-emu) or a GPU's (cuda).
    TS_CHECK(backend == cuda::kCliName,
             "run: --backend " << backend << ": this triescope runs the CUDA kernels "
                               << (cuda::kEmulated ? "on the host runtime (--backend cuda-emu); for a GPU, configure with "
                                                     "-DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_WITH_CUDA=ON"
                                                   : "on a GPU (--backend cuda); for the host runtime, configure with -DTRIESCOPE_CUDA_HOST=ON"));
    cuda::sample_use_cuda(s);  // throws when no device is usable or the model has no CUDA twin
#else
    TS_FAIL("run: --backend " << backend << ": this triescope was built without a CUDA backend (configure with -DTRIESCOPE_CUDA_HOST=ON)");
#endif
  }
  std::string out = p.get("out");
  if (out.empty()) out = std::filesystem::path(p.positional[0]).stem().string() + ".trace.jsonl";
  TraceFileWriter writer(out);  // temp file + rename: no half-written trace on failure
  std::ostringstream report;
  [[maybe_unused]] const SampleRun r = run_sample(s, &writer, report);
#ifdef TRIESCOPE_WITH_TORCH
  if (model_has_tokenizer(*s.model) && !r.result.hypotheses.empty())
    report << "best, as text: " << model_decode_text(*s.model, s.prompt) << "|"
           << model_decode_text(*s.model, r.result.hypotheses[0].tokens) << "\n";
#endif
  writer.commit();
  if (!p.has("quiet")) std::cout << report.str() << "trace: " << out << "\n";
  return 0;
}

}  // namespace triescope::cli
