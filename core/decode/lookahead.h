// Lookahead decoding (Fu et al. 2024) with two verification layouts:
//  - independent: up to G candidate n-grams, each verified as its own chain
//    (the official implementation's behaviour: every candidate recomputes its
//    whole length);
//  - trie: the candidates merged into a trie rooted at the last accepted
//    token, cut to budgets D (depth) and B (nodes), every unique node computed
//    once (lookahead-trie-verification-ko.md, Algorithm 1).
// Both accept the longest path matching the model's greedy predictions, so
// the output equals plain greedy decoding token for token.
//
// Everything fed in one step is one token tree under the last accepted
// token: the Jacobi lookahead window is a chain (position = depth), the
// candidates are chains or a trie. The ancestor mask serves all of it, and
// the rollback of unaccepted tokens is a GC compaction plan.
#pragma once
#include <cstdint>
#include <vector>

#include "core/common/enum_names.h"
#include "core/decode/decode_options.h"
#include "core/decode/greedy_decode.h"
#include "core/model/model.h"
#include "core/trace/trace.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/lookahead.cpp), whose name and
// verify kind head the trace.
const AlgorithmSpec& lookahead_spec();

enum class LookaheadVerify { greedy_only, independent, trie };

inline constexpr EnumName<LookaheadVerify> kLookaheadVerifyNames[] = {
    {LookaheadVerify::trie, "trie"}, {LookaheadVerify::independent, "independent"}, {LookaheadVerify::greedy_only, "greedy_only"}};
const char* lookahead_verify_name(LookaheadVerify v);

struct LookaheadConfig {
  int32_t max_new_tokens = 64;
  int32_t eos_token = -1;
  int32_t window = 10;          // W: Jacobi window length (lookahead branch)
  int32_t ngram = 5;            // N: n-gram size (key token + N - 1 continuation tokens)
  int32_t max_candidates = 5;   // G: candidates drawn from the pool per step
  int32_t pool_per_key = 16;    // n-grams kept per key token (most recent first)
  int32_t trie_depth = 4;       // D: deepest trie level verified (trie mode)
  int32_t trie_nodes = 64;      // B: most trie nodes verified per step (trie mode)
  uint64_t seed = 1;            // initial window fill
  LookaheadVerify verify = LookaheadVerify::trie;
};

struct LookaheadMetrics {
  int32_t prompt_len = 0;
  int32_t generated = 0;
  int32_t steps = 0;                 // forward passes after the prefill
  int64_t computed_tokens = 0;       // every token fed, prefill and lookahead branch included
  int64_t computed_decode = 0;       // computed_tokens minus the prefill
  int64_t verify_tokens = 0;         // tokens fed for candidate verification
  int64_t lookahead_tokens = 0;      // tokens fed for the Jacobi window
  int64_t accepted_from_candidates = 0;  // tokens accepted beyond the one greedy token per step
  int64_t peak_slots = 0;
  double seconds = 0.0;
  nlohmann::json to_json() const;

  LookaheadMetrics() = default;
  // Greedy decoding's (lookahead's reference), its three lookahead counters 0.
  explicit LookaheadMetrics(const GreedyMetrics& g)
      : prompt_len(g.prompt_len), generated(g.generated), steps(g.steps), computed_tokens(g.computed_tokens),
        computed_decode(g.computed_decode), peak_slots(g.peak_slots), seconds(g.seconds) {}
};

struct LookaheadResult {
  std::vector<int32_t> tokens;  // generated tokens (EOS included if produced)
  LookaheadMetrics metrics;

  LookaheadResult() = default;
  // Greedy decoding's result, reported beside lookahead's as its reference.
  LookaheadResult(const GreedyResult& g) : tokens(g.tokens), metrics(g.metrics) {}  // NOLINT(google-explicit-constructor)
};

// Verification (Alg. 1 line 5) run elsewhere: the cuda backend's device
// verifier, installed in DecodeOptions::verifiers under "lookahead_candidates". Given the
// verification pass's logits, it returns every row's greedy token (argmax,
// argmax_row's tie rule) and the longest candidate path whose every token is
// its parent's greedy token (candidates in creation order, a parent before
// its children; the first longest chain in independent mode).
struct LookaheadVerifyOutput {
  std::vector<int32_t> greedy;   // [logits.rows]
  std::vector<int32_t> matched;  // candidate indices, root side first
};
class LookaheadVerifier {
 public:
  virtual ~LookaheadVerifier() = default;
  // cand_parent: the parent's candidate index, -1 for the root (row root_row).
  virtual LookaheadVerifyOutput verify(const Logits& logits, int32_t root_row, const std::vector<int32_t>& cand_row,
                                       const std::vector<int32_t>& cand_parent, const std::vector<int32_t>& cand_token) = 0;
};

LookaheadResult lookahead_decode(Model& model, const std::vector<int32_t>& prompt, const LookaheadConfig& cfg,
                                 TraceSink* trace = nullptr, const DecodeOptions& opt = {});

}  // namespace triescope
