// The verify payload of kind "speculative_chain" (speculative decoding,
// core/decode/speculative.cpp): a verify step's `verify` object, each draft
// of the chain tested in order until the first rejection
// (docs/trace-format.md, "Verification kinds"; $defs/verify_speculative_chain
// in docs/trace-format.schema.json). Its field names are written and read
// here only (ctest trace_field_literals); the kind's reader
// (core/analysis/speculative_chain.cpp) is registered with this type.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace triescope {

// One tested draft: layer l's node, min(1, p/q) and the uniform draw.
struct SpeculativeDecision {
  int32_t layer = 1;  // 1-based position in the chain
  int32_t node = 0;
  double accept_prob = 0.0;
  double u = 0.0;
  bool accepted = false;  // u < accept_prob

  bool operator==(const SpeculativeDecision&) const = default;
};

struct SpeculativeChainVerify {
  static constexpr const char* kKind = kVerifySpeculativeChain;

  int64_t iteration = 0;                      // the draft/verify iteration, in [0, INT32_MAX]
  std::vector<SpeculativeDecision> decisions;  // the drafts tested, in chain order
  int32_t accepted = 0;                        // drafts accepted (the leading ones)
  int32_t steps = 0;                           // tokens produced: accepted + 1

  bool operator==(const SpeculativeChainVerify&) const = default;

  // The `verify` object, with its kind.
  nlohmann::json to_json() const;
  // A recorded `verify` object; `where` ("step 4: verify") names it in errors:
  // "step 4: verify: field decisions[0].u must be a number, got \"x\"".
  static SpeculativeChainVerify from_json(const nlohmann::json& j, const std::string& where);
};

}  // namespace triescope
