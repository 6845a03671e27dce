// Trie-based beam search (trie paper Algorithm 2): every beam lives in one
// token tree over one shared KV cache; queries read their ancestors through
// the ancestor mask; positions are depths; garbage collection every g steps
// compacts the cache in one gather.
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

DecodeResult trie_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg,
                              TraceSink* trace = nullptr, const DecodeOptions& opt = {},
                              LogitsConstraint* constraint = nullptr);

// Its registered spec (core/decode/algorithms/trie_beam_search.cpp), whose
// name and verify kind head the trace.
const AlgorithmSpec& trie_beam_search_spec();

}  // namespace triescope
