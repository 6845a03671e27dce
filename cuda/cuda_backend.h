// The `cuda` backend as the CLI and tests select it: swaps a sample's models
// for their CUDA twins, installs the device verifiers and marks its traces
// "backend": "cuda" (built with nvcc, on a GPU) or "cuda-emulated" (the same
// kernels on the host runtime, cuda/host_runtime/). Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/decode/run_sample.h"

namespace triescope::cuda {

#ifdef TRIESCOPE_CUDA_HOST_RUNTIME
inline constexpr bool kEmulated = true;
inline constexpr const char* kBackendName = "cuda-emulated";  // trace header "backend"
inline constexpr const char* kCliName = "cuda-emu";           // triescope run --backend
#else
inline constexpr bool kEmulated = false;
inline constexpr const char* kBackendName = "cuda";
inline constexpr const char* kCliName = "cuda";
#endif

// The CUDA twin of a CPU model. Throws Error naming the model type when it has
// no CUDA twin (only "synthetic" has one: a transformer is rebuilt from its
// sample's model object instead, see transformer_on_cuda), or when no device
// is usable.
std::unique_ptr<Model> model_to_cuda(const Model& cpu_model);

// A sample's "transformer" model object moved to device "cuda": "device" set
// to "cuda", "attention" "auto" unless the sample names one ("auto" on cuda
// is the tree attention kernel, which sample_use_cuda registers). On the
// host runtime LibTorch stays on the CPU ("device" "cpu") and attention is
// the emulated tree attention kernel ("tree_kernel"), unless the sample
// names another.
json transformer_on_cuda(const json& model_obj);

// A sample's "model" or "draft_model" object built on the CUDA backend, once:
// a synthetic model as its CUDA twin, a transformer on device "cuda" with the
// tree attention kernel (on the host runtime: LibTorch on the CPU with the
// emulated kernel). A scripted model, a missing device or a LibTorch without
// CUDA is refused with an Error naming the file and field.
std::unique_ptr<Model> model_build(const JsonObjectReader& model_obj);

// Where this backend runs each seam of a sample (its BackendSpec::supports):
// synthetic models and transformers on the device (on the host runtime a
// transformer with "dense" or "gather" attention is LibTorch on the host),
// other model types refused; the mask builder and every verify kind with a
// registered device verifier on the device; a STATIC constraint's VNTK index
// on the device when it ranks fully, the baselines and "ranking": "sparse"
// (the host StaticStep) on the host; the beam decoders' selection on the
// device (cuda/device_selector.h).
BackendSupport sample_supports(const json& sample, const AlgorithmSpec& algorithm);

// Installs the device seams into a sample whose models and constraint are
// built: the device mask builder and the device verifiers; sets
// s.options.backend. (The constraint's index is built on the device by the
// backend's make_constraint_index, cuda/static/static_constraint_index.h.)
void sample_install(Sample& s);

// Moves a sample loaded for the CPU onto the CUDA backend: refused as
// sample_load refuses it (sample_supports), its models rebuilt with
// model_build (the draft first) and its constraint rebuilt from the sample's
// object with the device index, then sample_install. Every algorithm is
// accepted.
void sample_use_cuda(Sample& s);

// Adds this build's CUDA backend ("cuda" or "cuda-emu") to the backend
// registry (core/decode/backend.h); calling it again does nothing. On a GPU
// it also registers the tree attention kernel, so "auto" attention on device
// "cuda" uses it from the start; the host runtime's kernel reads CPU tensors,
// so it is registered only when this backend builds a model (model_build),
// never for --backend cpu.
void backend_register();

// Registers the tree attention kernel (cuda/tree_attention.cuh) as this
// build runs it: on device memory on a GPU, on host memory on the host
// runtime. Idempotent.
void backend_tree_attention_register();

}  // namespace triescope::cuda
