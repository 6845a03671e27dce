// Checks every trace must pass whatever algorithm wrote it
// (docs/trace-format.md): record order, keyframes, summary figures equal to
// what the step records add up to, a consistent tree in every keyframe.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/decode/algorithm.h"

namespace triescope::testing {

// Runs Catch2 CHECKs over `records` written by `spec` with `keyframe_interval`;
// `decoder_metrics` is what the decoder returned (SampleRun::metrics).
void check_trace_properties(const std::vector<nlohmann::json>& records, const AlgorithmSpec& spec, int32_t keyframe_interval,
                            const nlohmann::json& decoder_metrics);

}  // namespace triescope::testing
