// The backend registry: where a sample's models and kernels run. "cpu" (the
// reference) is built in; the CUDA backend registers "cuda" or "cuda-emu"
// (cuda/cuda_backend.h, cuda::backend_register). The CLI's --backend choices
// are the registered names.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/json_reader.h"
#include "core/model/model.h"

namespace triescope {

struct Sample;

struct BackendSpec {
  std::string name;        // --backend value: cpu, cuda, cuda-emu
  std::string trace_name;  // the trace header's backend: cpu-reference, cuda, cuda-emulated
  std::string description;
  // Builds a sample's "model" or "draft_model" object on this backend (each
  // model is built once, where it runs). Errors name the file and field.
  std::function<std::unique_ptr<Model>(const JsonObjectReader& model_obj)> build_model;
  // Installs the backend's seams into a loaded sample (mask builder,
  // verifiers, a constraint's device index) and sets options.backend.
  std::function<void(Sample& s)> prepare;
};

// Adds a spec; throws Error when the name is taken.
void backend_register(BackendSpec spec);
const BackendSpec* backend_find(std::string_view name);
// The CPU reference (always registered).
const BackendSpec& backend_cpu();
std::vector<const BackendSpec*> backends();
std::string backend_names();  // "cpu, cuda-emu"

}  // namespace triescope
