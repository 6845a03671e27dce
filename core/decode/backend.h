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

#include "core/common/enum_names.h"
#include "core/config/json_reader.h"
#include "core/constraint/constraint_index_request.h"
#include "core/model/model.h"

namespace triescope {

struct Sample;
struct AlgorithmSpec;

// Where a backend runs one seam of a sample (FlashInfer's
// backend_requirement, ggml's supports_op): on its device, on the host (a
// documented host part of the backend), or not at all.
enum class SeamPlace { device, host, refused };
inline constexpr EnumName<SeamPlace> kSeamPlaceNames[] = {
    {SeamPlace::device, "device"}, {SeamPlace::host, "host"}, {SeamPlace::refused, "refused"}};
const char* seam_place_name(SeamPlace p);

struct SeamSupport {
  std::string seam;    // model, draft_model, mask, verify.<kind>, greedy_argmax, constraint, constraint.ranking, selection
  std::string field;   // the sample field that decides it ("model.type", "constraint.ranking"); empty when none does
  std::string value;   // that field's value in the sample
  SeamPlace place = SeamPlace::host;
  std::string reason;  // why it runs on the host or is refused (on the device: empty, or a note on its limits)
};

// A backend's answer for one sample, seam by seam.
struct BackendSupport {
  std::string backend;  // the --backend name
  std::vector<SeamSupport> seams;
  const SeamSupport* find(std::string_view seam) const;
  // The first refused seam, or null.
  const SeamSupport* refused() const;
  // {"model": "device", "constraint": "host", ...}: each seam's place, for a
  // trace header or a report.
  nlohmann::json to_json() const;
};

// Throws Error on the first refused seam, naming the file, the field and the
// backend: `samples/x.json: constraint.ranking "sparse" is not supported on
// backend cuda-emu: <reason>`.
void backend_support_check(const BackendSupport& support, const std::string& sample_path);

struct BackendSpec {
  std::string name;        // --backend value: cpu, cuda, cuda-emu
  std::string trace_name;  // the trace header's backend: cpu-reference, cuda, cuda-emulated
  std::string description;
  // Builds a sample's "model" or "draft_model" object on this backend (each
  // model is built once, where it runs). Errors name the file and field.
  std::function<std::unique_ptr<Model>(const JsonObjectReader& model_obj)> build_model;
  // Builds a sample's constraint index on this backend (each index is built
  // once, where it runs, as models are); empty: the CPU's
  // constraint_index_make. Errors name the constraint field.
  ConstraintIndexMaker make_constraint_index;
  // Where this backend runs each seam of a sample (the raw sample file and
  // its registered algorithm); sample_load refuses a sample with a refused
  // seam before its constraint is built. Empty: every seam on the host.
  std::function<BackendSupport(const nlohmann::json& sample, const AlgorithmSpec& algorithm)> supports;
  // Installs the backend's seams into a loaded sample (mask builder,
  // verifiers) and sets options.backend.
  std::function<void(Sample& s)> prepare;
};

// `backend`'s answer for a sample (every seam the sample uses on the host
// when the backend declares none).
BackendSupport backend_supports(const BackendSpec& backend, const nlohmann::json& sample, const AlgorithmSpec& algorithm);
// The seams a sample uses, each placed on the host for `reason` (the CPU
// reference's answer, and the start of every backend's).
BackendSupport backend_support_host(const std::string& backend, const nlohmann::json& sample, const AlgorithmSpec& algorithm,
                                    const std::string& reason);

// Adds a spec; throws Error when the name is taken.
void backend_register(BackendSpec spec);
const BackendSpec* backend_find(std::string_view name);
// The CPU reference (always registered).
const BackendSpec& backend_cpu();
std::vector<const BackendSpec*> backends();
std::string backend_names();  // "cpu, cuda-emu"

}  // namespace triescope
