#include "cuda/cuda_backend.h"

#include <exception>
#include <string>

#include "core/common/error.h"
#include "core/decode/backend.h"
#include "core/model/model_factory.h"
#include "cuda/cuda_synthetic_model.h"
#include "cuda/device_verifiers.h"
#include "cuda/incremental_ancestor_mask.h"
#include "cuda/static/static_constraint_index.h"
#include "cuda/tree_attention.cuh"

namespace triescope::cuda {

std::unique_ptr<Model> model_to_cuda(const Model& cpu_model) {
  if (const auto* syn = dynamic_cast<const SyntheticModel*>(&cpu_model)) return std::make_unique<CudaSyntheticModel>(syn->config());
  TS_FAIL("cuda backend: model type \"" << cpu_model.describe().value("type", std::string("?"))
                                        << "\" has no CUDA twin (\"synthetic\" runs on its CUDA twin; a \"transformer\" is rebuilt "
                                           "from its sample on device \"cuda\" by sample_use_cuda)");
}

json transformer_on_cuda(const json& model_obj) {
  json m = model_obj;
  if (kEmulated) {
    // The kernel reads LibTorch's CPU tensors as its "device" memory.
    m["device"] = "cpu";
    if (!m.contains("attention") || m["attention"] == "auto") m["attention"] = "tree_kernel";
    return m;
  }
  m["device"] = "cuda";
  // "auto" on "cuda" is the tree attention kernel once registered (below); an
  // explicit dense / gather / tree_kernel choice of the sample is kept.
  if (!m.contains("attention")) m["attention"] = "auto";
  return m;
}

namespace {

std::string model_type(const json& model_obj) {
  return model_obj.is_object() && model_obj.contains("type") && model_obj["type"].is_string() ? model_obj["type"].get<std::string>()
                                                                                                : std::string("?");
}

// LibTorch reports a missing CUDA runtime or device with its own exception
// type (c10::Error, a std::exception) and a backtrace: keep its first line.
std::string first_line(const char* what) {
  std::string s(what ? what : "");
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// A "transformer" model object rebuilt on device "cuda" (model_from_json, so
// a derived draft's keep_layers / perturbation is applied again the same way).
std::unique_ptr<Model> transformer_build_cuda(const json& model_obj, const std::string& path, const std::string& field) {
  try {
    return model_from_json(JsonObjectReader(transformer_on_cuda(model_obj), path, field));
  } catch (const Error& e) {
    TS_FAIL("cuda backend: " << field << ": " << e.what());
  } catch (const std::exception& e) {
    TS_FAIL("cuda backend: " << field << ": LibTorch could not run it on device \"" << (kEmulated ? "cpu" : "cuda")
                              << "\": " << first_line(e.what()));
  }
}

}  // namespace

std::unique_ptr<Model> model_build(const JsonObjectReader& obj) {
  const std::string field = obj.prefix().empty() ? std::string("model") : obj.prefix();
  const std::string type = model_type(obj.object_json());
  try {
    if (type == "transformer") {
      backend_tree_attention_register();  // "auto" picks the kernel on "cuda" (registering touches no device)
      return transformer_build_cuda(obj.object_json(), obj.origin(), field);
    }
    if (type == "synthetic") return model_to_cuda(*model_from_json(obj));
    if (field == "model") return model_to_cuda(*model_from_json(obj));  // names the type that has no twin
    TS_FAIL("cuda backend: " << field << " type \"" << type
                              << "\" has no CUDA implementation (\"synthetic\" and \"transformer\" run on the GPU)");
  } catch (const Error& e) {
    TS_FAIL(obj.origin() << ": " << e.what());
  } catch (const std::exception& e) {
    TS_FAIL(obj.origin() << ": cuda backend: " << first_line(e.what()));
  }
}

void sample_install(Sample& s) {
  try {
    verifiers_install(s.options.verifiers, VerifyExec::device);  // every registered device verifier
    // A STATIC constraint with the VNTK index masks on the device (its masks,
    // valid counts, rows read and next states are the kernel's); the
    // baselines (pointer trie, PPV, hash bitmap) and "ranking": "sparse"
    // (the host StaticStep) stay on the host.
    if (auto c = static_constraint_to_cuda(s.constraint, VerifyExec::device)) s.constraint = std::move(c);
  } catch (const Error& e) {
    TS_FAIL(s.path << ": " << e.what());
  } catch (const std::exception& e) {
    TS_FAIL(s.path << ": cuda backend: " << first_line(e.what()));
  }
  s.options.backend = kBackendName;
  // The trie decoder's mask rows come from the device builder, so the trace
  // records what the GPU built (the batch layout's rows are still host-built).
  s.options.make_mask = [] { return std::make_unique<IncrementalAncestorMask>(); };
}

void sample_use_cuda(Sample& s) {
  // The draft first: a draft without a CUDA implementation is refused before
  // the target touches a device.
  if (s.raw.contains("draft_model")) s.draft = model_build(JsonObjectReader(s.raw.at("draft_model"), s.path, "draft_model"));
  s.model = model_build(JsonObjectReader(s.raw.at("model"), s.path, "model"));
  sample_install(s);
}

void backend_tree_attention_register() { tree_attention_register(kEmulated ? TreeAttentionMemory::host : TreeAttentionMemory::device); }

void backend_register() {
  if (!kEmulated) backend_tree_attention_register();
  if (backend_find(kCliName)) return;
  BackendSpec b;
  b.name = kCliName;
  b.trace_name = kBackendName;
  b.description = kEmulated ? "the CUDA kernels on the host runtime (cuda/host_runtime/)" : "the CUDA kernels on a GPU";
  b.build_model = model_build;
  b.prepare = sample_install;
  ::triescope::backend_register(std::move(b));
}

}  // namespace triescope::cuda
