// What one decoder call holds from its arguments, the same for every
// decoder: the (target) model, the prompt, the settings, the options, the
// vocabulary and prompt sizes, and the trace recorder over the sink.
#pragma once
#include <cstdint>
#include <vector>

#include "core/decode/decode_options.h"
#include "core/decode/decode_result.h"
#include "core/model/model.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

template <class Config>
struct DecoderCall {
  DecoderCall(Model& model, const std::vector<int32_t>& prompt, const Config& cfg, TraceSink* trace, const DecodeOptions& opt)
      : model_(model), prompt_(prompt), cfg_(cfg), opt_(opt), V_(model.vocab_size()), n_(static_cast<int32_t>(prompt.size())),
        rec_(trace, opt.keyframe_interval) {}

  Model& model_;
  const std::vector<int32_t>& prompt_;
  const Config& cfg_;
  const DecodeOptions& opt_;
  const int32_t V_, n_;
  TraceRecorder rec_;
};

}  // namespace triescope
