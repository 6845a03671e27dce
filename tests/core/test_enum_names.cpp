// core/common/enum_names.h: one (value, name) table serves an enum's name
// function, its parser and the name list its errors print.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "core/common/enum_names.h"
#include "core/decode/backend.h"
#include "core/decode/lookahead.h"
#include "core/decode/multigen.h"

using namespace triescope;

namespace {
enum class Shade { red, green, blue, unnamed };
constexpr EnumName<Shade> kShadeNames[] = {{Shade::red, "red"}, {Shade::green, "green"}, {Shade::blue, "blue"}};

// Every value of `table` maps to its name and back, through the table and
// through the enum's own name function, and no two values share a name.
template <class E, size_t N>
void check_round_trip(const EnumName<E> (&table)[N], const char* (*name_of)(E)) {
  std::set<std::string> seen;
  for (const EnumName<E>& e : table) {
    CAPTURE(e.name);
    CHECK(std::string(name_of(e.value)) == e.name);
    CHECK(enum_name(table, e.value) == name_of(e.value));
    CHECK(enum_from_name(table, e.name) == e.value);
    CHECK(seen.insert(e.name).second);
  }
  CHECK_FALSE(enum_from_name(table, "sideways").has_value());
}
}  // namespace

TEST_CASE("enum names: a table maps values to names and names to values", "[enum_names]") {
  CHECK(std::string(enum_name(kShadeNames, Shade::green)) == "green");
  CHECK(std::string(enum_name(kShadeNames, Shade::unnamed)) == "?");
  CHECK(enum_from_name(kShadeNames, "blue") == Shade::blue);
  CHECK_FALSE(enum_from_name(kShadeNames, "Blue").has_value());  // exact, case included
  CHECK_FALSE(enum_from_name(kShadeNames, "").has_value());
}

TEST_CASE("enum names: the list reads as an error message writes it, in table order", "[enum_names]") {
  CHECK(enum_names_text(kShadeNames) == "red, green or blue");
  constexpr EnumName<Shade> two[] = {{Shade::blue, "blue"}, {Shade::red, "red"}};
  CHECK(enum_names_text(two) == "blue or red");
  constexpr EnumName<Shade> one[] = {{Shade::red, "red"}};
  CHECK(enum_names_text(one) == "red");
}

TEST_CASE("enum names: the decoders' enums round-trip through their tables", "[enum_names]") {
  check_round_trip(kMultiGenMethodNames, multigen_method_name);
  check_round_trip(kLookaheadVerifyNames, lookahead_verify_name);
  check_round_trip(kSeamPlaceNames, seam_place_name);
}
