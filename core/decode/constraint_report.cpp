#include "core/decode/constraint_report.h"

#include <string>

namespace triescope {

ConstraintCompliance constraint_compliance(const SampleConstraint& c, const std::vector<Hypothesis>& hyps) {
  ConstraintCompliance out;
  for (const auto& h : hyps) {
    ++out.hypotheses;
    out.in_set += c.set().contains(h.tokens);
  }
  return out;
}

void static_constraint_report(const SampleConstraint& c, const DecodeResult& r, std::ostream& os) {
  const auto comp = constraint_compliance(c, r.hypotheses);
  const auto d = c.describe();
  os << "constraint: " << d.value("name", d.value("impl", std::string("?"))) << " over |C| = " << c.set().size() << " ids (L = "
     << c.set().length << ", " << c.set().origin << "); compliance " << comp.in_set << "/" << comp.hypotheses
     << " hypotheses in C" << (comp.in_set == comp.hypotheses ? " (100%)" : " (VIOLATION)") << "\n";
}

}  // namespace triescope
