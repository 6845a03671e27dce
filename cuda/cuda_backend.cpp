#include "cuda/cuda_backend.h"

#include <exception>
#include <string>

#include "core/common/error.h"
#include "core/constraint/sample_constraint.h"
#include "core/decode/algorithm.h"
#include "core/decode/backend.h"
#include "core/decode/greedy_decode.h"
#include "core/model/model_factory.h"
#include "cuda/cuda_synthetic_model.h"
#include "cuda/device_selector.h"
#include "cuda/device_verifiers.h"
#include "cuda/greedy_argmax.h"
#include "cuda/incremental_ancestor_mask.h"
#include "cuda/static/static_constraint_index.h"
#include "cuda/topk_candidates.cuh"
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
    // The kernel reads LibTorch's CPU tensors as its "device" memory; a model
    // whose dtype it cannot read keeps "auto" (LibTorch attention on the CPU).
    m["device"] = "cpu";
    if (!m.contains("attention")) m["attention"] = "auto";
    if (m["attention"] == "auto" && tree_attention_reads_dtype(m.value("dtype", std::string("float32")))) m["attention"] = "tree_kernel";
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

// An error's text without a leading "<origin>: " (model_build names the file once).
std::string without_origin(const std::string& origin, const char* what) {
  const std::string s(what);
  return s.rfind(origin + ": ", 0) == 0 ? s.substr(origin.size() + 2) : s;
}

// The backend's ConstraintIndexMaker: the VNTK index on the device.
std::shared_ptr<ConstraintIndex> device_constraint_index(const ConstraintIndexRequest& request) {
  return constraint_index_make(request, VerifyExec::device);
}

// A "transformer" model object rebuilt on device "cuda" (model_from_json, so
// a derived draft's keep_layers / perturbation is applied again the same way).
std::unique_ptr<Model> transformer_build_cuda(const json& model_obj, const std::string& path, const std::string& field) {
  try {
    return model_from_json(JsonObjectReader(transformer_on_cuda(model_obj), path, field));
  } catch (const Error& e) {
    TS_FAIL("cuda backend: " << field << ": " << without_origin(path, e.what()));
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

namespace {

// Where a "model" or "draft_model" object runs (model_build refuses the rest itself).
void model_place(SeamSupport& x, const json& model_obj) {
  if (x.value == "synthetic") return void(x.place = SeamPlace::device);
  if (x.value != "transformer") {
    x.place = SeamPlace::refused;
    x.reason = "no CUDA implementation (\"synthetic\" and \"transformer\" run on the GPU)";
    return;
  }
  const std::string attention = transformer_on_cuda(model_obj).value("attention", std::string("auto"));
  const std::string dtype = model_obj.value("dtype", std::string("float32"));
  const bool kernel_reads = tree_attention_reads_dtype(dtype);
  if (!kernel_reads && attention == "tree_kernel") {  // as the transformer factory refuses it, on every backend
    x.place = SeamPlace::refused;
    x.reason = "dtype \"" + dtype + "\" cannot run attention \"tree_kernel\" (the kernel reads fp32)";
    return;
  }
  const bool host = kEmulated && attention != "tree_kernel";
  x.place = host ? SeamPlace::host : SeamPlace::device;
  if (host)
    x.reason = "attention \"" + attention + "\" is LibTorch on the CPU (the host runtime runs only the tree_kernel attention" +
               (kernel_reads ? ")" : ", which reads fp32, not this model's " + dtype + ")");
}

bool device_verifier_for(const std::string& kind) {
  for (const DeviceVerifierSpec* d : device_verifiers())
    if (d->kind == kind) return true;
  return false;
}

void seam_place(SeamSupport& x, const json& sample) {
  x.reason.clear();
  x.place = SeamPlace::device;
  if (x.seam == "model" || x.seam == "draft_model") {
    model_place(x, sample.at(x.seam));
  } else if (x.seam.rfind("verify.", 0) == 0) {
    if (device_verifier_for(x.seam.substr(7))) return;
    x.place = SeamPlace::host;
    x.reason = "no device verifier is registered for verify kind " + x.seam.substr(7) + ": the CPU reference verifies";
  } else if (x.seam == "constraint") {
    const bool sparse = sample.at("constraint").value("ranking", std::string("full")) == "sparse";
    if (static_index_on_device(x.value, sparse)) return;
    x.place = SeamPlace::host;
    x.reason = sparse ? "\"ranking\": \"sparse\" ranks with the host StaticStep, so the index is the host VntkIndex"
                      : "impl \"" + x.value + "\" has no kernel (only \"vntk\" masks on the device): the index masks on the host";
  } else if (x.seam == "constraint.ranking") {
    if (x.value != "sparse") return void(x.reason = "the selection seam ranks the masked rows");
    x.place = SeamPlace::host;
    x.reason = "the host StaticStep ranks the allowed tokens (cuda::StaticStepCuda is not wired into the decoders)";
  } else if (x.seam == "selection") {
    // cuda::DeviceSelector ranks up to kTopkMaxK candidates (2 x num_beams) on the device, more on the host.
    const int64_t beams = x.value.empty() ? 0 : std::stoll(x.value);  // sample_number: digits only
    if (beams <= kTopkMaxK / 2) return;
    x.place = SeamPlace::host;
    x.reason = "2 x num_beams candidates exceed the radix top-k's " + std::to_string(kTopkMaxK) +
               " (cuda/topk_candidates.cuh): the host ranks";
  }
}

}  // namespace

BackendSupport sample_supports(const json& sample, const AlgorithmSpec& algorithm) {
  BackendSupport b = backend_support_host(kCliName, sample, algorithm, "");
  for (SeamSupport& x : b.seams) seam_place(x, sample);
  return b;
}

void sample_install(Sample& s) {
  try {
    verifiers_install(s.options.verifiers, VerifyExec::device);  // every registered device verifier
    s.options.verifiers.put_seam<GreedyArgmax>(kGreedyArgmaxSeam, make_greedy_argmax(VerifyExec::device));
  } catch (const Error& e) {
    TS_FAIL(s.path << ": " << e.what());
  } catch (const std::exception& e) {
    TS_FAIL(s.path << ": cuda backend: " << first_line(e.what()));
  }
  s.options.backend = kBackendName;
  s.options.seams = s.support.to_json();  // the trace header says where each seam ran
  // The trie decoder's mask rows come from the device builder, so the trace
  // records what the GPU built (the batch layout's rows are still host-built).
  s.options.make_mask = [] { return std::make_unique<IncrementalAncestorMask>(); };
  s.options.make_selector = [] { return std::make_unique<DeviceSelector>(); };  // the beam step's top 2b (cuda/device_selector.h)
}

void sample_use_cuda(Sample& s) {
  // The draft first: a draft without a CUDA implementation is refused before
  // the target touches a device.
  if (s.raw.contains("draft_model")) s.draft = model_build(JsonObjectReader(s.raw.at("draft_model"), s.path, "draft_model"));
  s.model = model_build(JsonObjectReader(s.raw.at("model"), s.path, "model"));
  s.support = sample_supports(s.raw, *s.spec);
  backend_support_check(s.support, s.path);
  if (s.raw.contains("constraint"))
    s.constraint = sample_constraint_from_json(JsonObjectReader(s.raw.at("constraint"), s.path, "constraint"), s.model->vocab_size(), s.path,
                                               device_constraint_index);
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
  b.make_constraint_index = device_constraint_index;
  b.supports = sample_supports;
  b.prepare = sample_install;
  ::triescope::backend_register(std::move(b));
}

}  // namespace triescope::cuda
