// What the built-in algorithms' sample runs share: reports of hypotheses and
// the conversion of a decoder's result into a SampleRun.
#pragma once
#include <ostream>
#include <vector>

#include "core/decode/algorithm.h"
#include "core/decode/lookahead.h"
#include "core/decode/run_sample.h"
#include "core/decode/sampling.h"

namespace triescope {

// Reads the "beam" section every beam algorithm has (BeamSection, algorithm.h).
void parse_beam_section(JsonObjectReader& r, const Sample& s, BeamSection& out);
// "algorithm: ..., beams b, max_new_tokens m, gc_interval g, prompt n tokens"
void report_beam_settings(std::ostream& os, const Sample& s, const BeamConfig& c);
// The speculative decoders' shared checks and "sampling" object: no
// deterministic sampling, no EOS (they run max_new_tokens steps).
void parse_speculative_common(JsonObjectReader& r, const Sample& s, const BeamConfig& beam, SamplingConfig& sampling);
// "sampling: temperature t, top_k k, top_p p, seed s"
void report_sampling_settings(std::ostream& os, const SamplingConfig& c);
// max_new_tokens and eos_token of a "greedy" or "lookahead" section.
void parse_sequence_limits(JsonObjectReader& section, const Sample& s, LookaheadConfig& c);
// "label: N hypotheses, best first" and one line per hypothesis.
void report_hypotheses(std::ostream& os, const Sample& s, const std::vector<Hypothesis>& hyps, const char* label);
// The sampling decoders' report: the distinct final beams and the forward passes.
void report_sampling(std::ostream& os, const Sample& s, const BeamConfig& beam, const SamplingDecodeResult& r);
// The decoder's metrics as its summary writes them (seconds left out).
nlohmann::json metrics_json(nlohmann::json metrics);
// A sequence as the one output of a run.
Hypothesis sequence_output(const std::vector<int32_t>& tokens);

}  // namespace triescope
