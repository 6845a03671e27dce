#include "core/decode/algorithms/sample_report.h"

#include <algorithm>
#include <iomanip>

#include "core/common/error.h"
#include "core/decode/constraint_report.h"

namespace triescope {

void parse_beam_section(JsonObjectReader& r, const Sample& s, BeamSection& out) {
  out.beam = BeamConfig::from_json(r.object("beam"), s.model->vocab_size());
}

void report_beam_settings(std::ostream& os, const Sample& s, const BeamConfig& c) {
  os << "algorithm: " << s.algorithm << ", beams " << c.num_beams << ", max_new_tokens " << c.max_new_tokens << ", gc_interval "
     << c.gc_interval << ", prompt " << s.prompt.size() << " tokens\n";
}

void parse_sampling_sections(JsonObjectReader& r, const Sample& s, BeamSection& c, SamplingConfig& sampling) {
  parse_beam_section(r, s, c);
  if (r.has("sampling")) sampling = SamplingConfig::from_json(r.object("sampling"));
}

void parse_speculative_common(JsonObjectReader& r, const Sample& s, BeamSection& c, SamplingConfig& sampling) {
  parse_sampling_sections(r, s, c, sampling);
  TS_CHECK(!sampling.deterministic, r.where("sampling.deterministic") << " is only supported by beam_sampling");
  TS_CHECK(c.beam.eos_token < 0, r.where("beam.eos_token") << " is not supported by " << s.algorithm);
}

void report_sampling_settings(std::ostream& os, const Sample& s, const BeamConfig& beam, const SamplingConfig& c) {
  report_beam_settings(os, s, beam);
  os << "sampling: temperature " << c.temperature << ", top_k " << c.top_k << ", top_p " << c.top_p << ", seed " << c.seed
     << (c.deterministic ? ", deterministic (top-W)" : "") << "\n";
}

SampleRun sequence_run(std::ostream& os, const Sample& s, const std::vector<int32_t>& tokens, const nlohmann::json& metrics) {
  os << "output: " << tokens_to_text(*s.model, tokens) << "\n";
  return {{sequence_output(tokens)}, metrics_json(metrics), nullptr};
}

DecodeResult beam_decoder_run(std::ostream& os, const Sample& s, TraceSink* trace, BeamDecoder decode, const char* label) {
  const BeamConfig& c = s.config_as<BeamSection>().beam;
  report_beam_settings(os, s, c);
  DecodeResult r = decode(*s.model, s.prompt, c, trace, s.options, s.constraint.get());
  report_hypotheses(os, s, r.hypotheses, label);
  if (s.constraint) static_constraint_report(*s.constraint, r, os);
  return r;
}

void report_hypotheses(std::ostream& os, const Sample& s, const std::vector<Hypothesis>& hyps, const char* label) {
  os << label << ": " << hyps.size() << " hypotheses, best first\n";
  for (size_t i = 0; i < hyps.size(); ++i)
    os << "  #" << i + 1 << "  score " << std::fixed << std::setprecision(4) << hyps[i].score << "  | "
       << tokens_to_text(*s.model, s.prompt) << " | " << tokens_to_text(*s.model, hyps[i].tokens) << "\n";
}

void report_sampling(std::ostream& os, const Sample& s, const BeamConfig& beam, const SamplingDecodeResult& r) {
  os << s.algorithm << ": " << r.decode.hypotheses.size() << " distinct final beams, best first\n";
  for (size_t i = 0; i < r.decode.hypotheses.size(); ++i) {
    const auto& h = r.decode.hypotheses[i];
    os << "  #" << i + 1 << "  target log-likelihood " << std::fixed << std::setprecision(4) << h.sum_logprobs << " ("
       << h.score << " per token)  | " << tokens_to_text(*s.model, s.prompt) << " | " << tokens_to_text(*s.model, h.tokens) << "\n";
  }
  const double steps = std::max(1, beam.max_new_tokens);
  os << "target forward passes: " << r.sampling.target_calls << " (" << std::setprecision(3)
     << static_cast<double>(r.sampling.target_calls) / steps << " per output step, prefill included)";
  if (r.sampling.draft_calls) os << ", draft forward passes: " << r.sampling.draft_calls;
  os << "\n";
}

nlohmann::json metrics_json(nlohmann::json metrics) {
  metrics.erase("seconds");
  return metrics;
}

Hypothesis sequence_output(const std::vector<int32_t>& tokens) {
  Hypothesis h;
  h.tokens = tokens;
  return h;
}

}  // namespace triescope
