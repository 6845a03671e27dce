#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#ifdef TRIESCOPE_WITH_TORCH
#include "core/model/torch/torch_transformer.h"
#endif

namespace triescope::cli {

namespace {
// --dtype fp32|bf16: the "dtype" of the sample's model objects (model and, if
// any, draft_model; docs/transformer.md), each of which must be a transformer.
void model_dtype_override(json& sample, const std::string& flag, const std::string& path) {
  const std::string dtype = dtype_option_parse("run", flag);
  for (const char* field : {"model", "draft_model"}) {
    if (!sample.is_object() || !sample.contains(field) || !sample[field].is_object()) continue;
    json& m = sample[field];
    const std::string type = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "";
    TS_CHECK(type == "transformer", "run: --dtype " << flag << ": " << path << ": " << field << ".type is \"" << type
                                                    << "\"; --dtype applies to transformer models only");
    m["dtype"] = dtype;
  }
}
}  // namespace

int cmd_run(const Args& args) {
  auto p = parse_args(args, {"out", "backend", "prompt", "dtype"}, {"quiet"});
  TS_CHECK(p.positional.size() == 1, "run: expected one sample file, got " << p.positional.size() << " arguments");
  const std::string backend_name = p.get("backend", "cpu");
  const BackendSpec* backend = backend_find(backend_name);
  if (!backend) {
    const bool cuda_kind = backend_name == "cuda" || backend_name == "cuda-emu";
    TS_FAIL("run: --backend " << backend_name << ": this triescope has backends " << backend_names()
                              << (cuda_kind ? " (one CUDA backend per build: configure with -DTRIESCOPE_CUDA_HOST=ON for cuda-emu, "
                                              "-DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_WITH_CUDA=ON for cuda on a GPU)"
                                            : ""));
  }
  json sample = reader_boundary(p.positional[0], [&] { return json_load_file(p.positional[0]); });  // as sample_load reads it
  if (p.has("dtype")) model_dtype_override(sample, p.get("dtype"), p.positional[0]);
  Sample s = sample_parse(sample, p.positional[0], *backend);  // models built once, on the backend
  if (p.has("prompt")) {  // text replaces the sample's prompt ids (needs a model with tokenizer.json)
#ifdef TRIESCOPE_WITH_TORCH
    s.prompt = model_encode_text(*s.model, p.get("prompt"));
    TS_CHECK(!s.prompt.empty(), "run: --prompt encodes to no tokens");
#else
    TS_FAIL("run: --prompt needs a model with a tokenizer; this build has no LibTorch transformer");
#endif
  }
  std::string out = p.get("out");
  if (out.empty()) out = std::filesystem::path(p.positional[0]).stem().string() + ".trace.jsonl";
  TraceFileWriter writer(out);  // temp file + rename, or streamed to a device/FIFO/"-" (core/common/output_file.h)
  for (const std::string& stale : writer.output().stale_removed())
    std::cerr << "triescope run: removed " << stale << ", the temporary of a writer that died\n";
  std::ostringstream report;
  [[maybe_unused]] const SampleRun r = run_sample(s, &writer, report);
#ifdef TRIESCOPE_WITH_TORCH
  if (model_has_tokenizer(*s.model) && !r.outputs.empty())
    report << "best, as text: " << model_decode_text(*s.model, s.prompt) << "|" << model_decode_text(*s.model, r.outputs[0].tokens)
           << "\n";
#endif
  writer.commit();
  // With the trace on standard output the report goes to standard error.
  if (!p.has("quiet")) (out == "-" ? std::cerr : std::cout) << report.str() << "trace: " << out << "\n";
  return 0;
}

}  // namespace triescope::cli
