// Sampling warps and beam sampling (DSBD paper Section 2.1, Eq. 1).
// A "pair distribution" is a distribution over (beam, token) pairs, index
// beam * vocab + token: beam sampling, the DSBD draft and the DSBD
// verification all draw from one.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/json_reader.h"
#include "core/decode/beam_config.h"
#include "core/decode/decode_options.h"
#include "core/decode/decode_result.h"
#include "core/model/model.h"
#include "core/select/philox.h"
#include "core/trace/step_record.h"
#include "core/trace/trace.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/beam_sampling.cpp), whose name and
// verify kind head the trace.
const AlgorithmSpec& beam_sampling_spec();

// The warp T of the paper, applied to the joint beam distribution.
struct SamplingConfig {
  double temperature = 1.0;  // > 0
  int32_t top_k = 0;         // 0: off; keep the k most likely pairs
  double top_p = 1.0;        // 1: off; keep the smallest set with mass >= top_p
  bool deterministic = false;  // beam sampling only: keep the top W pairs (Section 2.1)
  uint64_t seed = 0;

  static SamplingConfig from_json(JsonObjectReader r);
  nlohmann::json to_json() const;
};

// Eq. 1 with the warp: prob[i * V + x] = T o (exp(beam_logprob[i] + token_logprob[i][x]) / P).
// `token_logprob` is [beams x V] row-major (log-softmax rows). Returns a
// normalised [beams x V] vector; warped-out pairs are exactly 0.
std::vector<double> beam_distribution(const std::vector<double>& beam_logprob, const std::vector<double>& token_logprob,
                                      int32_t vocab, const SamplingConfig& warp);

// Applies T to unnormalised log-weights [n] and returns probabilities [n].
std::vector<double> warp_log_weights(const std::vector<double>& log_w, const SamplingConfig& warp);

// Inverse-CDF draw of an index from `prob` with u in [0, 1). Never returns a
// zero-probability index.
int64_t sample_index(const std::vector<double>& prob, double u);

// Indices of the `w` largest entries, largest first, ties to the lower index.
std::vector<int64_t> top_indices(const std::vector<double>& prob, int32_t w);

struct SamplingDecodeMetrics {
  int64_t target_calls = 0;   // target forward passes (prefill included)
  int64_t draft_calls = 0;    // draft forward passes (prefill included)
  int64_t target_tokens = 0;  // queries fed to the target (the compute a CPU pays for)
  int64_t draft_tokens = 0;   // queries fed to the draft
  int64_t iterations = 0;     // draft/verify rounds (speculative decoders)
  int64_t layers_verified = 0;
  int64_t layers_accepted = 0;
  double log_likelihood = 0.0;  // target log-likelihood (unwarped) of the best output
  nlohmann::json to_json() const;
};

struct SamplingDecodeResult {
  DecodeResult decode;  // hypotheses: the final beams, best (highest target log-likelihood) first
  SamplingDecodeMetrics sampling;
  // The trace summary's metrics: decode's, with the sampling figures under "sampling".
  nlohmann::json summary_metrics() const;
};

// Beam sampling (the paper's baseline): W beams drawn iid from T o p_beam
// at every step (with replacement, as Theorem 3.1 states it), or the top W
// pairs in deterministic mode. One shared token trie, one KV cache; equal
// sequences share one node. cfg.num_beams = W, cfg.max_new_tokens = steps.
SamplingDecodeResult beam_sampling(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                                   const SamplingConfig& sampling, TraceSink* trace = nullptr, const DecodeOptions& opt = {});

}  // namespace triescope

namespace triescope {

// Feeds tree nodes to one model over the shared slot layout. Two models
// (draft and target) share one TokenTree and one slot numbering but each
// holds its own cache, so each has its own "written" set: a node written by
// the target may still be missing from the draft's cache. feed() adds every
// missing ancestor of the requested nodes to the same forward pass.
class TreeFeeder {
 public:
  explicit TreeFeeder(Model& m) : model_(m) {}
  Model& model() { return model_; }
  // Runs one forward over: missing ancestors (id order), then `nodes` in the
  // given order (re-feeding a written node is allowed: it rewrites the same
  // K/V), keeping each query's log-softmax row (row()). Returns the trace's
  // forward object when `want_trace`.
  nlohmann::json feed(const TokenTree& tree, int32_t num_slots, const std::vector<int32_t>& nodes, bool want_trace);
  // `node`'s log-softmax row [V] of the last feed(); null when that pass did
  // not feed it.
  const double* row(int32_t node) const;
  bool written(int32_t node) const { return node < static_cast<int32_t>(written_.size()) && written_[static_cast<size_t>(node)]; }
  void reset() { written_.clear(); calls = 0; tokens = 0; }
  int64_t calls = 0;   // forward passes
  int64_t tokens = 0;  // queries fed

 private:
  Model& model_;
  std::vector<char> written_;  // [tree size] node's K/V is in this model's cache
  Logits logits_;
  std::vector<double> logprob_;  // [queries x V] the last pass's log-softmax rows
  std::vector<int32_t> row_of_;  // [tree size] node -> its row in logprob_, -1 when not fed
};

// A drafting decode's prefill: `nodes` (the prompt but its last token, which
// is the first query of the first draft and verification) fed to the target,
// then to the draft, both passes recorded in `ev`; nothing when `nodes` is empty.
void feed_prefill(TreeFeeder& target, TreeFeeder& draft, const TokenTree& tree, int32_t num_slots, const std::vector<int32_t>& nodes,
                  StepRecord& ev);

// A drafting decode's pass and token counts from its two feeders; the
// target's are also the decode's model calls and computed tokens.
void feeder_counts(const TreeFeeder& target, const TreeFeeder& draft, SamplingDecodeMetrics& s, DecodeMetrics& m);

}  // namespace triescope
