// How a decode's outputs meet a sample's constraint (STATIC's compliance:
// every hypothesis in C) and the one report line the beam samples print.
#pragma once
#include <cstdint>
#include <ostream>
#include <vector>

#include "core/constraint/sample_constraint.h"
#include "core/decode/decode_result.h"

namespace triescope {

struct ConstraintCompliance {
  int64_t hypotheses = 0;
  int64_t in_set = 0;  // hypotheses whose tokens lie in C
};
ConstraintCompliance constraint_compliance(const SampleConstraint& c, const std::vector<Hypothesis>& hyps);

// One report line: implementation, |C|, and how many hypotheses lie in C.
void static_constraint_report(const SampleConstraint& c, const DecodeResult& r, std::ostream& os);

}  // namespace triescope
