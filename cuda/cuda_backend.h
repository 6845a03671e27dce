// The `cuda` backend as the CLI and tests select it: swaps a sample's models
// for their CUDA twins, installs the device verifiers and marks its traces
// "backend": "cuda" (built with nvcc, on a GPU) or "cuda-emulated" (the same
// kernels on the host runtime, cuda/host_runtime/). Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/decode/run_sample.h"

namespace triescope {
class DsbdLayerVerifier;
class SpeculativeVerifier;
class LookaheadVerifier;
}  // namespace triescope

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

// Where the verifiers run: on the device, or (CPU tests only) the same
// block algorithm on the host with a block of one thread.
enum class VerifyExec { device, host_twin };

// DSBD layer verification (Algorithm 1 lines 13-29) and speculative chain
// verification: cuda/dsbd_verify.h. Device: throws when no device is usable.
std::shared_ptr<DsbdLayerVerifier> make_dsbd_verifier(VerifyExec exec);
std::shared_ptr<SpeculativeVerifier> make_speculative_verifier(VerifyExec exec);
// Lookahead verification (argmax rows + longest matching path): cuda/lookahead_verify.h.
std::shared_ptr<LookaheadVerifier> make_lookahead_verifier(VerifyExec exec);

// A sample's "model" or "draft_model" object built on the CUDA backend, once:
// a synthetic model as its CUDA twin, a transformer on device "cuda" with the
// tree attention kernel (on the host runtime: LibTorch on the CPU with the
// emulated kernel). A scripted model, a missing device or a LibTorch without
// CUDA is refused with an Error naming the file and field.
std::unique_ptr<Model> model_build(const JsonObjectReader& model_obj);

// Installs the device seams into a sample whose models are built: the device
// mask builder, the device verifiers and, for a STATIC constraint with the
// VNTK index, the device index (cuda/static/static_constraint_index.h); sets
// s.options.backend.
void sample_install(Sample& s);

// Moves a sample loaded for the CPU onto the CUDA backend: its models rebuilt
// with model_build (the draft first), then sample_install. Every algorithm is
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
