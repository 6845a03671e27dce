#include "core/common/spec_registry.h"
#include "core/decode/algorithm.h"

namespace triescope {

namespace {
SpecRegistry<AlgorithmSpec>& registry() {
  static SpecRegistry<AlgorithmSpec> r("algorithm registry", "parse and run", [](const AlgorithmSpec& a) { return a.parse && a.run; });
  return r;
}
}  // namespace

void algorithm_register(AlgorithmSpec spec) { registry().add(std::move(spec)); }

const AlgorithmSpec* algorithm_find(std::string_view name) { return registry().find(name); }

std::vector<const AlgorithmSpec*> algorithms() { return registry().all(); }

std::string algorithm_names_if(const std::function<bool(const AlgorithmSpec&)>& pred) { return registry().names(pred); }

std::string algorithm_names() { return registry().names(); }

}  // namespace triescope
