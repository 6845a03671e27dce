#include "core/trace/lookahead_candidates_verify_record.h"

#include <climits>

#include "core/trace/record_fields.h"

namespace triescope {

using nlohmann::json;

namespace {

constexpr const char* kCandidates = "candidates";
constexpr const char* kCandidateNodes = "candidate_nodes";
constexpr const char* kWindowNodes = "window_nodes";
constexpr const char* kAcceptedNodes = "accepted_nodes";
constexpr const char* kAcceptedTokens = "accepted_tokens";

}  // namespace

json LookaheadCandidatesVerify::to_json() const {
  return {{"kind", kKind},
          {kCandidates, candidates},
          {kCandidateNodes, candidate_nodes},
          {kWindowNodes, window_nodes},
          {kAcceptedNodes, accepted_nodes},
          {kAcceptedTokens, accepted_tokens}};
}

LookaheadCandidatesVerify LookaheadCandidatesVerify::from_json(const json& j, const std::string& where) {
  const RecordFields f(j, where);
  f.kind_check(kKind);
  LookaheadCandidatesVerify v;
  v.candidates = f.int_lists(kCandidates);
  v.candidate_nodes = f.ints(kCandidateNodes, -1);
  v.window_nodes = f.ints(kWindowNodes);
  v.accepted_nodes = f.ints(kAcceptedNodes);
  v.accepted_tokens = f.ints(kAcceptedTokens);
  return v;
}

}  // namespace triescope
