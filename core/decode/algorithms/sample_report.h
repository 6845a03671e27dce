// What the built-in algorithms' sample runs share: reports of hypotheses and
// the conversion of a decoder's result into a SampleRun.
#pragma once
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/decode/algorithm.h"
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
// The sampling decoders' settings: report_beam_settings's line, then
// "sampling: temperature t, top_k k, top_p p, seed s".
void report_sampling_settings(std::ostream& os, const Sample& s, const BeamConfig& beam, const SamplingConfig& c);
// max_new_tokens and eos_token of a "greedy" or "lookahead" section.
struct SequenceLimits {
  int32_t max_new_tokens = 0;
  int32_t eos_token = -1;
};
SequenceLimits parse_sequence_limits(JsonObjectReader& section, const Sample& s);
// A string field that names one of `values` as `name` writes it ("method":
// "copy"), `dflt` when absent; any other string is an Error listing the names:
// "samples/x.json: multigen.method must be copy, structured or hybrid, got \"x\"".
template <class E>
E parse_named(JsonObjectReader& section, const std::string& key, E dflt, std::initializer_list<E> values, const char* (*name)(E)) {
  const std::string given = section.get_string(key, name(dflt));
  std::string names;
  size_t i = 0;
  for (E v : values) {
    if (given == name(v)) return v;
    names += i == 0 ? "" : i + 1 == values.size() ? " or " : ", ";
    names += name(v);
    ++i;
  }
  TS_FAIL(section.where(key) << " must be " << names << ", got \"" << given << "\"");
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
