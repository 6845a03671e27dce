// Plain greedy decoding, one token per forward pass: the reference output
// lookahead decoding must reproduce token for token.
#pragma once
#include <cstdint>
#include <vector>

#include "core/decode/decode_options.h"
#include "core/decode/lookahead.h"
#include "core/model/model.h"
#include "core/trace/trace.h"

namespace triescope {

struct AlgorithmSpec;
// Its registered spec (core/decode/algorithms/greedy.cpp), whose name heads the trace.
const AlgorithmSpec& greedy_spec();

// opt: the trace's backend, and where the argmax runs (its verifier in opt.verifiers).
LookaheadResult greedy_decode(Model& model, const std::vector<int32_t>& prompt, int32_t max_new_tokens,
                              int32_t eos_token = -1, TraceSink* trace = nullptr, const DecodeOptions& opt = {});

}  // namespace triescope
