#include "core/model/torch/unicode_class.h"

#include <algorithm>
#include <iterator>

namespace triescope {

namespace {
struct ClassRange {
  uint32_t first, last;
  UnicodeClass cls;
};
struct AsciiFold {
  uint32_t cp;
  char lower;
};
constexpr UnicodeClass kLetter = UnicodeClass::letter;
constexpr UnicodeClass kNumber = UnicodeClass::number;
constexpr UnicodeClass kSpace = UnicodeClass::space;
#include "core/model/torch/unicode_class_table.inc"
}  // namespace

UnicodeClass unicode_class(uint32_t cp) {
  const auto* end = std::end(kClassRanges);
  const auto* it = std::upper_bound(std::begin(kClassRanges), end, cp,
                                    [](uint32_t c, const ClassRange& r) { return c < r.first; });
  if (it == std::begin(kClassRanges)) return UnicodeClass::other;
  --it;
  return cp <= it->last ? it->cls : UnicodeClass::other;
}

char unicode_ascii_fold(uint32_t cp) {
  if (cp >= 'a' && cp <= 'z') return static_cast<char>(cp);
  if (cp >= 'A' && cp <= 'Z') return static_cast<char>(cp - 'A' + 'a');
  for (const AsciiFold& f : kAsciiFolds)
    if (f.cp == cp) return f.lower;
  return 0;
}

const char* unicode_class_version() { return kUnicodeVersion; }

}  // namespace triescope
