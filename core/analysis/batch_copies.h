// Trace analysis (no Qt): the token held at each position of each beam copy
// in the batch layout (batch_beam_search, one cache region per beam), at a
// step. The trace records no tree for that layout, only each step's chosen
// beams (beam j continues copy from_beam with token); the copies are
// rebuilt the way the decoder reorders them (input_ids[beam_idx] + token),
// so a mask cell can name the token its row and its column hold.
#pragma once
#include <cstdint>
#include <vector>

#include "core/analysis/mask_check.h"
#include "core/trace/trace_replay.h"

namespace triescope {

// [copies][positions] the copies after `step`'s selection (the ones its
// forward pass feeds): config.beam.num_beams copies of the prompt, then one
// token per step. Empty for a trace that is not in the batch layout.
// Throws Error (naming file, step and field) on a malformed chosen entry.
std::vector<std::vector<int32_t>> batch_copy_tokens(const TraceReplay& t, int32_t step);

}  // namespace triescope
