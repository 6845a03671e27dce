// A sample's "constraint" object as the decoders see it: a LogitsConstraint
// over a set C of token sequences. STATIC (static_constraint.h) is the one
// implementation; decoders and the sample loader hold it through this
// interface, so core/decode needs nothing of its index.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/config/json_reader.h"
#include "core/constraint/constraint_index_request.h"
#include "core/constraint/constraint_set.h"
#include "core/select/logits_constraint.h"

namespace triescope {

class SampleConstraint : public LogitsConstraint {
 public:
  // The set C the outputs must lie in.
  virtual const ConstraintSet& set() const = 0;
};

// A sample's "constraint" object (the fields: static_constraint.h,
// static_constraint_from_json), its index built by `make_index` (the CPU's
// when empty); every error names the field.
std::shared_ptr<SampleConstraint> sample_constraint_from_json(JsonObjectReader r, int32_t vocab_size, const std::string& sample_path,
                                                              const ConstraintIndexMaker& make_index = {});

}  // namespace triescope
