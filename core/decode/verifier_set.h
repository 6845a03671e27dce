// Where verification runs, by verify kind (core/analysis/verify_kind.h): a
// backend puts one verifier per kind it runs elsewhere (the cuda backend:
// cuda/device_verifiers.h); a decoder finds its own kind's and runs the CPU
// reference when the set has none. Type-erased, so adding a kind adds no
// field here; find<T>() refuses a verifier of another type with a named error.
// A seam that has no verify kind (greedy's argmax, core/decode/greedy_decode.h)
// is held apart, by its own name (put_seam, find_seam), so kinds() lists
// verify kinds only.
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
    store(entries_, kind, std::move(verifier));
  }
  // `kind`'s verifier, or null when none is installed. Throws Error naming
  // the kind and both types when it was installed as another type than T.
  template <class T>
  std::shared_ptr<T> find(std::string_view kind) const {
    return typed<T>(entries_, kind, "verify kind");
  }
  // The same for a seam with no verify kind, under its own name.
  template <class T>
  void put_seam(const std::string& seam, std::shared_ptr<T> impl) {
    store(seams_, seam, std::move(impl));
  }
  template <class T>
  std::shared_ptr<T> find_seam(std::string_view seam) const {
    return typed<T>(seams_, seam, "seam");
  }
  // The type `kind`'s verifier was installed as; typeid(void) when none.
  std::type_index type_of(std::string_view kind) const;
  std::vector<std::string> kinds() const;

 private:
  struct Entry {
    std::shared_ptr<void> verifier;
    std::type_index type;
  };
  using Entries = std::map<std::string, Entry, std::less<>>;
  // Installs (or replaces) `name`'s entry, remembering T for typed().
  template <class T>
  static void store(Entries& entries, const std::string& name, std::shared_ptr<T> impl) {
    entries.insert_or_assign(name, Entry{std::shared_ptr<void>(std::move(impl)), std::type_index(typeid(T))});
  }
  template <class T>
  static std::shared_ptr<T> typed(const Entries& entries, std::string_view name, const char* what) {
    const auto it = entries.find(name);
    if (it == entries.end()) return nullptr;
    if (it->second.type != std::type_index(typeid(T))) type_mismatch(what, name, it->second.type, typeid(T));
    return std::static_pointer_cast<T>(it->second.verifier);
  }
  const Entry* entry(std::string_view kind) const;
  [[noreturn]] static void type_mismatch(const char* what, std::string_view name, std::type_index have, std::type_index want);
  Entries entries_;  // by verify kind
  Entries seams_;    // seams with no verify kind, by name
};

}  // namespace triescope
