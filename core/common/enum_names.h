// The names of an enum's values as one table of (value, name) pairs, which
// serves both the enum's name function and its parser, so the two cannot
// drift apart:
//   inline constexpr EnumName<MultiGenMethod> kMultiGenMethodNames[] = {
//       {MultiGenMethod::copy, "copy"}, {MultiGenMethod::structured, "structured"}, ...};
// The table's order is the order an error message lists the names in.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace triescope {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name `table` gives `value`; "?" for a value it does not list.
template <class E, size_t N>
constexpr const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table)
    if (e.value == value) return e.name;
  return "?";
}

// The value `table` names `name` (exactly), if any.
template <class E, size_t N>
constexpr std::optional<E> enum_from_name(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& e : table)
    if (name == e.name) return e.value;
  return std::nullopt;
}

// The names in table order as a message lists them: "copy, structured or hybrid".
template <class E, size_t N>
std::string enum_names_text(const EnumName<E> (&table)[N]) {
  std::string names;
  for (size_t i = 0; i < N; ++i) {
    names += i == 0 ? "" : i + 1 == N ? " or " : ", ";
    names += table[i].name;
  }
  return names;
}

}  // namespace triescope
