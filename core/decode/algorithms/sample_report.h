// What the built-in algorithms' sample runs share: reports of hypotheses and
// the conversion of a decoder's result into a SampleRun.
#pragma once
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/common/enum_names.h"
#include "core/common/error.h"
#include "core/decode/algorithm.h"
#include "core/decode/run_sample.h"
#include "core/decode/sampling.h"

namespace triescope {

// Reads the "beam" section every beam algorithm has (BeamSection, algorithm.h).
void parse_beam_section(JsonObjectReader& r, const Sample& s, BeamSection& out);
// "algorithm: ..., beams b, max_new_tokens m, gc_interval g, prompt n tokens"
void report_beam_settings(std::ostream& os, const Sample& s, const BeamConfig& c);
// The sampling decoders' sections: "beam" (into `c`) and the optional
// "sampling" object (into `sampling`).
void parse_sampling_sections(JsonObjectReader& r, const Sample& s, BeamSection& c, SamplingConfig& sampling);
// The same for the speculative decoders, with their checks: no
// deterministic sampling, no EOS (they run max_new_tokens steps).
void parse_speculative_common(JsonObjectReader& r, const Sample& s, BeamSection& c, SamplingConfig& sampling);
// The sampling decoders' settings: report_beam_settings's line, then
// "sampling: temperature t, top_k k, top_p p, seed s".
void report_sampling_settings(std::ostream& os, const Sample& s, const BeamConfig& beam, const SamplingConfig& c);
// Reads max_new_tokens and eos_token of a one-sequence section ("greedy",
// "lookahead", "multigen") into the config's fields of those names.
template <class Config>
void parse_sequence_limits(JsonObjectReader& section, const Sample& s, Config& config) {
  config.max_new_tokens = static_cast<int32_t>(section.get_int("max_new_tokens", 1, 1 << 20));
  config.eos_token = static_cast<int32_t>(section.get_int("eos_token", -1, s.model->vocab_size() - 1, -1));
}
// A string field that names one of the values in `names` ("method": "copy"),
// `dflt` when absent; any other string is an Error listing the names in table
// order: "samples/x.json: multigen.method must be copy, structured or hybrid, got \"x\"".
template <class E, size_t N>
E parse_named(JsonObjectReader& section, const std::string& key, E dflt, const EnumName<E> (&names)[N]) {
  const std::string given = section.get_string(key, enum_name(names, dflt));
  if (const std::optional<E> v = enum_from_name(names, given)) return *v;
  TS_FAIL(section.where(key) << " must be " << enum_names_text(names) << ", got \"" << given << "\"");
  return dflt;
}
// A one-sequence decoder's run: "output: ..." and the sequence as its output.
SampleRun sequence_run(std::ostream& os, const Sample& s, const std::vector<int32_t>& tokens, const nlohmann::json& metrics);
// Trie or batch beam search on the sample's "beam" section and constraint:
// reports the settings, the hypotheses under `label` and the constraint's work.
using BeamDecoder = DecodeResult (*)(Model& model, const std::vector<int32_t>& prompt, const BeamConfig& cfg, TraceSink* trace,
                                     const DecodeOptions& opt, LogitsConstraint* constraint);
DecodeResult beam_decoder_run(std::ostream& os, const Sample& s, TraceSink* trace, BeamDecoder decode, const char* label);
// "label: N hypotheses, best first" and one line per hypothesis.
void report_hypotheses(std::ostream& os, const Sample& s, const std::vector<Hypothesis>& hyps, const char* label);
// The sampling decoders' report: the distinct final beams and the forward passes.
void report_sampling(std::ostream& os, const Sample& s, const BeamConfig& beam, const SamplingDecodeResult& r);
// The decoder's metrics as its summary writes them (seconds left out).
nlohmann::json metrics_json(nlohmann::json metrics);
// A sequence as the one output of a run.
Hypothesis sequence_output(const std::vector<int32_t>& tokens);

}  // namespace triescope
