#include <map>
#include <sstream>

#include "core/common/error.h"
#include "core/decode/backend.h"
#include "core/decode/run_sample.h"
#include "core/model/model_factory.h"

namespace triescope {

namespace {
std::map<std::string, BackendSpec, std::less<>>& registry() {
  static std::map<std::string, BackendSpec, std::less<>> r = [] {
    std::map<std::string, BackendSpec, std::less<>> m;
    BackendSpec cpu;
    cpu.name = "cpu";
    cpu.trace_name = "cpu-reference";
    cpu.description = "the deterministic CPU reference";
    cpu.build_model = [](const JsonObjectReader& obj) { return model_from_json(obj); };
    cpu.prepare = [](Sample& s) { s.options.backend = "cpu-reference"; };
    m.emplace("cpu", std::move(cpu));
    return m;
  }();
  return r;
}
}  // namespace

void backend_register(BackendSpec spec) {
  TS_CHECK(!spec.name.empty() && spec.build_model && spec.prepare, "backend registry: a spec needs a name, build_model and prepare");
  TS_CHECK(!registry().count(spec.name), "backend registry: " << spec.name << " is registered twice");
  std::string name = spec.name;
  registry().emplace(std::move(name), std::move(spec));
}

const BackendSpec* backend_find(std::string_view name) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

const BackendSpec& backend_cpu() { return *backend_find("cpu"); }

std::vector<const BackendSpec*> backends() {
  std::vector<const BackendSpec*> out;
  for (const auto& [name, spec] : registry()) out.push_back(&spec);
  return out;
}

std::string backend_names() {
  std::ostringstream os;
  for (const BackendSpec* b : backends()) os << (os.tellp() > 0 ? ", " : "") << b->name;
  return os.str();
}

}  // namespace triescope
