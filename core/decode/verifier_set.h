// Where verification runs, by verify kind (core/analysis/verify_kind.h): a
// backend puts one verifier per kind it runs elsewhere (the cuda backend:
// cuda/device_verifiers.h); a decoder finds its own kind's and runs the CPU
// reference when the set has none. Type-erased, so adding a kind adds no
// field here; find<T>() refuses a verifier of another type with a named error.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

namespace triescope {

// "triescope::DsbdLayerVerifier": a type's readable name for messages.
std::string type_display_name(std::type_index t);

class VerifierSet {
 public:
  // Installs (or replaces) `kind`'s verifier, stored as a T.
  template <class T>
  void put(const std::string& kind, std::shared_ptr<T> verifier) {
    entries_.insert_or_assign(kind, Entry{std::shared_ptr<void>(std::move(verifier)), std::type_index(typeid(T))});
  }
  // `kind`'s verifier, or null when none is installed. Throws Error naming
  // the kind and both types when it was installed as another type than T.
  template <class T>
  std::shared_ptr<T> find(std::string_view kind) const {
    const Entry* e = entry(kind);
    if (!e) return nullptr;
    if (e->type != std::type_index(typeid(T))) type_mismatch(kind, e->type, typeid(T));
    return std::static_pointer_cast<T>(e->verifier);
  }
  // The type `kind`'s verifier was installed as; typeid(void) when none.
  std::type_index type_of(std::string_view kind) const;
  std::vector<std::string> kinds() const;

 private:
  struct Entry {
    std::shared_ptr<void> verifier;
    std::type_index type;
  };
  const Entry* entry(std::string_view kind) const;
  [[noreturn]] static void type_mismatch(std::string_view kind, std::type_index have, std::type_index want);
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace triescope
