// STATIC constraint sets as NumPy .npy. Differential: a set read, written
// (constraint_set_npy, what `constraint build` writes) and read again is the
// same set, and so is its text form.
#include "core/constraint/constraint_set.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int32_t kVocab = 1 << 20;
  ConstraintSet c;
  if (!fuzz::accepted([&] { c = constraint_set_parse_npy(fuzz::as_string(data, size), kVocab, "fuzz.npy"); })) return 0;
  ConstraintSet npy, text;
  FUZZ_CHECK(fuzz::accepted([&] { npy = constraint_set_parse_npy(constraint_set_npy(c), kVocab, "rewritten.npy"); }),
             "a set read from .npy is refused once written as .npy");
  FUZZ_CHECK(fuzz::accepted([&] { text = constraint_set_parse_text(constraint_set_text(c), kVocab, "rewritten.txt"); }),
             "a set read from .npy is refused once written as text");
  FUZZ_CHECK(npy.tokens == c.tokens && npy.length == c.length && text.tokens == c.tokens && text.length == c.length,
             "a set written and read again differs from the set read");
  return 0;
}
