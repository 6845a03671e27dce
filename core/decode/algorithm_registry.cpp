#include <algorithm>
#include <map>
#include <sstream>

#include "core/common/error.h"
#include "core/decode/algorithm.h"

namespace triescope {

namespace {
// Function-local: registrars in other files run during static initialisation.
std::map<std::string, AlgorithmSpec, std::less<>>& registry() {
  static std::map<std::string, AlgorithmSpec, std::less<>> r;
  return r;
}
}  // namespace

void algorithm_register(AlgorithmSpec spec) {
  TS_CHECK(!spec.name.empty(), "algorithm registry: a spec without a name");
  TS_CHECK(spec.parse && spec.run, "algorithm registry: " << spec.name << " needs parse and run");
  TS_CHECK(!registry().count(spec.name), "algorithm registry: " << spec.name << " is registered twice");
  std::string name = spec.name;
  registry().emplace(std::move(name), std::move(spec));
}

const AlgorithmSpec* algorithm_find(std::string_view name) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const AlgorithmSpec*> algorithms() {
  std::vector<const AlgorithmSpec*> out;
  for (const auto& [name, spec] : registry()) out.push_back(&spec);
  return out;
}

std::string algorithm_names_if(const std::function<bool(const AlgorithmSpec&)>& pred) {
  std::ostringstream os;
  bool first = true;
  for (const AlgorithmSpec* a : algorithms())
    if (pred(*a)) {
      os << (first ? "" : ", ") << a->name;
      first = false;
    }
  return first ? std::string("none") : os.str();
}

std::string algorithm_names() {
  return algorithm_names_if([](const AlgorithmSpec&) { return true; });
}

}  // namespace triescope
