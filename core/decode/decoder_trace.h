// What every decoder's trace shares: the header, named by the algorithm's
// registered spec (its name and verify kind, written once in
// core/decode/algorithms/), and the summary's outputs.
#pragma once
#include <utility>
#include <vector>

#include "core/decode/algorithm.h"
#include "core/decode/decode_options.h"
#include "core/decode/decode_result.h"
#include "core/model/model.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

// The header of `spec`'s trace on `opt.backend`: `config()` (built only when
// recorded), the model's description and vocabulary; each step's "kv" then
// gets what the model's engine reports it holds (Model::engine_state).
template <class F>
void record_header(TraceRecorder& rec, const AlgorithmSpec& spec, const DecodeOptions& opt, const Model& model, F&& config) {
  if (!rec.on()) return;
  rec.header({.algorithm = spec.name,
              .backend = opt.backend,
              .config = config(),
              .model = model.describe(),
              .verify_kind = spec.verify_kind,
              .vocab = model.vocab_strings(),
              .seams = opt.seams});
  rec.engine_state([&model] { return model.engine_state(); });
}

// The summary: `outputs()` and `metrics()` (the decoder's own figures) built
// only when recorded; `tree` null for a decoder without a token tree.
template <class O, class M>
void record_summary(TraceRecorder& rec, O&& outputs, M&& metrics, double seconds, const TokenTree* tree, int32_t num_slots) {
  if (!rec.on()) return;
  if (tree) rec.summary(outputs(), metrics(), seconds, *tree, num_slots);
  else rec.summary(outputs(), metrics(), seconds);
}

// The header config of a drafting decoder: its settings, the prompt and the
// draft model's description.
json drafting_config(json settings, const std::vector<int32_t>& prompt, const Model& draft);

// The summary's "outputs" for hypotheses (tokens, score, sum_logprobs) and
// for plain token sequences (tokens only).
json hypotheses_json(const std::vector<Hypothesis>& hypotheses);
json sequences_json(const std::vector<std::vector<int32_t>>& sequences);

}  // namespace triescope
