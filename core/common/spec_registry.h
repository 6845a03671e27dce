// A registry of specs by name: what the algorithm, backend and verify-kind
// registries share (docs/architecture.md, "The algorithm registry"). A spec
// is any struct with a `name`; each registry says which of its fields a spec
// must fill. Registrars in other files run during static initialisation, so
// a registry is a function-local static.
#pragma once
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/error.h"

namespace triescope {

template <class Spec>
class SpecRegistry {
 public:
  // `what` heads every error ("algorithm registry"); `complete` says whether
  // a spec fills the fields `needs` lists ("parse and run").
  SpecRegistry(std::string what, std::string needs, bool (*complete)(const Spec&))
      : what_(std::move(what)), needs_(std::move(needs)), complete_(complete) {}

  // Throws Error naming the registry and the spec when the spec has no name,
  // lacks a field or takes a name already registered.
  void add(Spec spec) {
    TS_CHECK(!spec.name.empty(), what_ << ": a spec without a name");
    TS_CHECK(complete_(spec), what_ << ": " << spec.name << " needs " << needs_);
    TS_CHECK(!specs_.count(spec.name), what_ << ": " << spec.name << " is registered twice");
    std::string name = spec.name;
    specs_.emplace(std::move(name), std::move(spec));
  }

  // The spec named `name`, or null.
  const Spec* find(std::string_view name) const {
    const auto it = specs_.find(name);
    return it == specs_.end() ? nullptr : &it->second;
  }

  // Every spec, by name.
  std::vector<const Spec*> all() const {
    std::vector<const Spec*> out;
    for (const auto& [name, spec] : specs_) out.push_back(&spec);
    return out;
  }

  // "a, b, c": the names of the specs `keep` accepts (null: all), for
  // messages; "none" when there is none.
  std::string names(const std::function<bool(const Spec&)>& keep = nullptr) const {
    std::ostringstream os;
    for (const auto& [name, spec] : specs_)
      if (!keep || keep(spec)) os << (os.tellp() > 0 ? ", " : "") << name;
    return os.tellp() > 0 ? os.str() : std::string("none");
  }

 private:
  std::string what_, needs_;
  bool (*complete_)(const Spec&);
  std::map<std::string, Spec, std::less<>> specs_;
};

// Registers a spec during static initialisation (each registry's
// TRIESCOPE_REGISTER_* macro defines one at namespace scope).
template <class Spec, void (*Register)(Spec)>
struct SpecRegistrar {
  explicit SpecRegistrar(Spec spec) { Register(std::move(spec)); }
};

}  // namespace triescope

// A registrar's unique name in its file: TRIESCOPE_SPEC_REGISTRAR_NAME(prefix_).
#define TRIESCOPE_SPEC_REGISTRAR_CAT2(a, b) a##b
#define TRIESCOPE_SPEC_REGISTRAR_CAT(a, b) TRIESCOPE_SPEC_REGISTRAR_CAT2(a, b)
#define TRIESCOPE_SPEC_REGISTRAR_NAME(prefix) TRIESCOPE_SPEC_REGISTRAR_CAT(prefix, __LINE__)
