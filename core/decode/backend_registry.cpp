#include "core/common/spec_registry.h"
#include "core/decode/backend.h"
#include "core/decode/run_sample.h"
#include "core/model/model_factory.h"

namespace triescope {

namespace {
BackendSpec cpu_spec() {
  BackendSpec cpu;
  cpu.name = "cpu";
  cpu.trace_name = "cpu-reference";
  cpu.description = "the deterministic CPU reference";
  cpu.build_model = [](const JsonObjectReader& obj) { return model_from_json(obj); };
  cpu.prepare = [](Sample& s) { s.options.backend = "cpu-reference"; };
  return cpu;
}

SpecRegistry<BackendSpec>& registry() {
  static SpecRegistry<BackendSpec> r = [] {
    SpecRegistry<BackendSpec> m("backend registry", "build_model and prepare", [](const BackendSpec& b) { return b.build_model && b.prepare; });
    m.add(cpu_spec());
    return m;
  }();
  return r;
}
}  // namespace

const char* seam_place_name(SeamPlace p) { return enum_name(kSeamPlaceNames, p); }

const SeamSupport* BackendSupport::find(std::string_view seam) const {
  for (const SeamSupport& x : seams)
    if (x.seam == seam) return &x;
  return nullptr;
}

const SeamSupport* BackendSupport::refused() const {
  for (const SeamSupport& x : seams)
    if (x.place == SeamPlace::refused) return &x;
  return nullptr;
}

json BackendSupport::to_json() const {
  json j = json::object();
  for (const SeamSupport& x : seams) j[x.seam] = seam_place_name(x.place);
  return j;
}

void backend_support_check(const BackendSupport& support, const std::string& sample_path) {
  const SeamSupport* r = support.refused();
  if (!r) return;
  if (r->field.empty()) TS_FAIL(sample_path << ": " << r->seam << " is not supported on backend " << support.backend << ": " << r->reason);
  TS_FAIL(sample_path << ": " << r->field << " \"" << r->value << "\" is not supported on backend " << support.backend << ": " << r->reason);
}

namespace {
// A string field of a sample object, or `fallback` when absent or not a string.
std::string sample_field(const json& sample, const char* object, const char* field, const char* fallback) {
  if (!sample.is_object() || !sample.contains(object) || !sample[object].is_object()) return fallback;
  const json& o = sample[object];
  return o.contains(field) && o[field].is_string() ? o[field].get<std::string>() : std::string(fallback);
}
// An integer field of a sample object as text, or "" when absent or not an integer.
std::string sample_number(const json& sample, const char* object, const char* field) {
  if (!sample.is_object() || !sample.contains(object) || !sample[object].is_object()) return "";
  const json& o = sample[object];
  return o.contains(field) && o[field].is_number_integer() ? std::to_string(o[field].get<int64_t>()) : std::string();
}
}  // namespace

BackendSupport backend_support_host(const std::string& backend, const json& sample, const AlgorithmSpec& algorithm,
                                    const std::string& reason) {
  BackendSupport b;
  b.backend = backend;
  auto add = [&](std::string seam, std::string field, std::string value) {
    b.seams.push_back({std::move(seam), std::move(field), std::move(value), SeamPlace::host, reason});
  };
  add("model", "model.type", sample_field(sample, "model", "type", "?"));
  if (sample.is_object() && sample.contains("draft_model")) add("draft_model", "draft_model.type", sample_field(sample, "draft_model", "type", "?"));
  if (!algorithm.verify_kind.empty()) add("verify." + algorithm.verify_kind, "", "");
  for (const std::string& seam : algorithm.seams) {
    if (seam == "selection")  // the step's top 2 x num_beams
      add(seam, "beam.num_beams", sample_number(sample, "beam", "num_beams"));
    else
      add(seam, "", "");
  }
  if (sample.is_object() && sample.contains("constraint")) {
    add("constraint", "constraint.impl", sample_field(sample, "constraint", "impl", "vntk"));
    add("constraint.ranking", "constraint.ranking", sample_field(sample, "constraint", "ranking", "full"));
  }
  return b;
}

BackendSupport backend_supports(const BackendSpec& backend, const json& sample, const AlgorithmSpec& algorithm) {
  if (backend.supports) return backend.supports(sample, algorithm);
  return backend_support_host(backend.name, sample, algorithm, "backend " + backend.name + " declares no device part");
}

void backend_register(BackendSpec spec) { registry().add(std::move(spec)); }

const BackendSpec* backend_find(std::string_view name) { return registry().find(name); }

const BackendSpec& backend_cpu() { return *backend_find("cpu"); }

std::vector<const BackendSpec*> backends() { return registry().all(); }

std::string backend_names() { return registry().names(); }

}  // namespace triescope
