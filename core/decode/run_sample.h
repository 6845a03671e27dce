// A sample file (samples/*.json) names an algorithm, a model, a prompt and the
// algorithm's settings. sample_load() reads one through the algorithm
// registry (core/decode/algorithm.h) and builds its models on a backend
// (core/decode/backend.h); run_sample() is the one entry point the CLI and
// the GUI's live mode share.
#pragma once
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/constraint/sample_constraint.h"
#include "core/decode/algorithm.h"
#include "core/decode/backend.h"
#include "core/decode/decode_options.h"
#include "core/model/model.h"
#include "core/trace/trace.h"

namespace triescope {

inline constexpr const char* kSampleFormat = "triescope.sample";
inline constexpr int kSampleVersion = 1;

struct Sample {
  std::string path;
  std::string name;
  std::string description;
  std::string algorithm;
  const AlgorithmSpec* spec = nullptr;  // the registered algorithm
  json raw;                             // the whole file (the CUDA backend rebuilds model objects from it)
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> draft;  // the "draft_model" of algorithms that accept one
  std::vector<int32_t> prompt;
  std::shared_ptr<const AlgorithmConfig> config;  // the algorithm's parsed sections
  DecodeOptions options;
  std::shared_ptr<SampleConstraint> constraint;  // the sample's "constraint" object (STATIC), if any, its index built by the backend
  BackendSupport support;  // where the backend runs each seam of this sample (support.to_json(): {"model": "device", ...})

  // The algorithm's config as its own type (throws Error on a mismatch).
  template <class T>
  const T& config_as() const {
    const T* c = dynamic_cast<const T*>(config.get());
    if (!c) throw Error(path + ": internal: algorithm " + algorithm + " has no config of the requested type");
    return *c;
  }
};

// Parses and validates a sample, building its models on `backend`; every
// error names the file and the field. A field the algorithm does not accept
// (a constraint, a draft model, a sampling object) is refused by name.
Sample sample_load(const std::string& path, const BackendSpec& backend = backend_cpu());
Sample sample_parse(const json& j, const std::string& origin, const BackendSpec& backend = backend_cpu());

// Runs the sample, sending the trace to `trace` (may be null), and writes a
// readable report to `report`.
SampleRun run_sample(const Sample& s, TraceSink* trace, std::ostream& report);

// Renders token ids with the model's vocabulary when it has one.
std::string tokens_to_text(const Model& m, const std::vector<int32_t>& tokens);

}  // namespace triescope
