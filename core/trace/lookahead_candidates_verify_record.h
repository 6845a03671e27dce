// The verify payload of kind "lookahead_candidates" (lookahead decoding,
// core/decode/lookahead.cpp): one pass's `verify` object, the n-gram pool's
// candidates, the nodes the pass computed for them and for the Jacobi
// window, and the accepted path (docs/trace-format.md, "Verification kinds";
// $defs/verify_lookahead_candidates in docs/trace-format.schema.json). Its
// field names are written and read here only (ctest trace_field_literals);
// the kind's reader (core/analysis/lookahead_candidates.cpp) is registered
// with this type.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace triescope {

struct LookaheadCandidatesVerify {
  static constexpr const char* kKind = kVerifyLookahead;

  std::vector<std::vector<int32_t>> candidates;  // the pool's n-grams for the pending token (token ids)
  std::vector<int32_t> candidate_nodes;          // the nodes computed for them (trie-merged or one chain each); -1: cut by D or B
  std::vector<int32_t> window_nodes;             // the Jacobi window's nodes
  std::vector<int32_t> accepted_nodes;           // candidate nodes on the accepted path, root side first
  std::vector<int32_t> accepted_tokens;          // the tokens the pass produced: the path's, then the greedy one

  bool operator==(const LookaheadCandidatesVerify&) const = default;

  // The `verify` object, with its kind.
  nlohmann::json to_json() const;
  // A recorded `verify` object; `where` ("step 4: verify") names it in errors:
  // "step 4: verify: field candidates[1][0] must be an integer in [0, 2147483647], got -3".
  static LookaheadCandidatesVerify from_json(const nlohmann::json& j, const std::string& where);
};

}  // namespace triescope
