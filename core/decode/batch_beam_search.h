// Batch beam search, the baseline the trie paper compares against (its
// Algorithm 1, Hugging Face semantics). Written independently of
// trie_beam_search (docs/conventions.md: a reference shares no code with what it
// checks): b full copies of the context, one region of the cache per beam,
// the cache reordered by one gather after every selection.
#pragma once
#include <vector>

#include "core/decode/beam_config.h"
#include "core/decode/decode_options.h"
#include "core/decode/decode_result.h"
#include "core/model/model.h"
#include "core/select/logits_constraint.h"
#include "core/trace/trace.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/batch_beam_search.cpp), whose name and
// verify kind head the trace.
const AlgorithmSpec& batch_beam_search_spec();

DecodeResult batch_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                               TraceSink* trace = nullptr, const DecodeOptions& opt = {},
                               LogitsConstraint* constraint = nullptr);

}  // namespace triescope
