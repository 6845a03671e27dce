#include "core/decode/run_sample.h"

#include <iomanip>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/run_sample_dsbd.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/model_factory.h"

namespace triescope {

Sample sample_parse(const json& j, const std::string& origin) {
  Sample s;
  s.path = origin;
  s.raw = j;
  JsonObjectReader r(j, origin);
  const std::string schema = r.get_string("schema");
  TS_CHECK(schema == kSampleFormat, r.where("schema") << " must be \"" << kSampleFormat << "\", got \"" << schema << "\"");
  const int64_t version = r.get_int("version", INT32_MIN, INT32_MAX);
  TS_CHECK(version == kSampleVersion, r.where("version") << " is " << version << ", this build reads version " << kSampleVersion);
  s.name = r.get_string("name");
  s.description = r.get_string("description", "");
  s.algorithm = r.get_string("algorithm");
  TS_CHECK(s.algorithm == "trie_beam_search" || s.algorithm == "batch_beam_search" || sample_algorithm_is_sampling(s.algorithm),
           r.where("algorithm") << " must be trie_beam_search, batch_beam_search, beam_sampling, speculative or dsbd, got \"" << s.algorithm << "\"");
  s.model = model_from_json(r.object("model"));
  const int32_t V = s.model->vocab_size();
  TS_CHECK(r.has("prompt") != r.has("prompt_text"), origin << ": give exactly one of prompt (ids) or prompt_text (strings)");
  if (r.has("prompt")) {
    s.prompt = r.get_int_array("prompt", 0, V - 1);
  } else {
    const auto vocab = s.model->vocab_strings();
    TS_CHECK(!vocab.empty(), r.where("prompt_text") << " needs a model with a vocabulary");
    s.prompt = tokens_from_strings(vocab, r.raw("prompt_text"), r.where("prompt_text"));
  }
  TS_CHECK(!s.prompt.empty(), origin << ": prompt must hold at least one token");
  s.beam = BeamConfig::from_json(r.object("beam"), V);
  if (sample_algorithm_is_sampling(s.algorithm)) sample_sampling_check(r, s);
  if (r.has("trace")) {
    auto t = r.object("trace");
    s.options.keyframe_interval = static_cast<int32_t>(t.get_int("keyframe_interval", 0, 1 << 20, 16));
    t.finish();
  }
  r.finish();
  return s;
}

Sample sample_load(const std::string& path) { return sample_parse(json_load_file(path), path); }

std::string tokens_to_text(const Model& m, const std::vector<int32_t>& tokens) {
  const auto vocab = m.vocab_strings();
  std::ostringstream os;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) os << ' ';
    if (tokens[i] >= 0 && static_cast<size_t>(tokens[i]) < vocab.size()) os << vocab[static_cast<size_t>(tokens[i])];
    else os << tokens[i];
  }
  return os.str();
}

namespace {
void report_result(std::ostream& os, const Model& model, const std::vector<int32_t>& prompt, const DecodeResult& r,
                   const char* label) {
  os << label << ": " << r.hypotheses.size() << " hypotheses, best first\n";
  for (size_t i = 0; i < r.hypotheses.size(); ++i) {
    const auto& h = r.hypotheses[i];
    os << "  #" << i + 1 << "  score " << std::fixed << std::setprecision(4) << h.score << "  | "
       << tokens_to_text(model, prompt) << " | " << tokens_to_text(model, h.tokens) << "\n";
  }
}
}  // namespace

SampleRun run_sample(Sample& s, TraceSink* trace, std::ostream& os) {
  SampleRun out;
  os << "sample: " << s.name << " (" << s.path << ")\n";
  if (!s.description.empty()) os << "  " << s.description << "\n";
  os << "algorithm: " << s.algorithm << ", beams " << s.beam.num_beams << ", max_new_tokens " << s.beam.max_new_tokens
     << ", gc_interval " << s.beam.gc_interval << ", prompt " << s.prompt.size() << " tokens\n";
  if (sample_algorithm_is_sampling(s.algorithm)) return run_sample_sampling(s, trace, os);
  if (s.algorithm == "batch_beam_search") {
    out.result = batch_beam_search(*s.model, s.prompt, s.beam, trace, s.options);
    report_result(os, *s.model, s.prompt, out.result, "batch beam search");
    const auto& m = out.result.metrics;
    os << "KV cache: batch layout holds " << m.peak_slots << " tokens at its peak (" << m.peak_bytes << " bytes)\n";
    return out;
  }
  out.result = trie_beam_search(*s.model, s.prompt, s.beam, trace, s.options);
  report_result(os, *s.model, s.prompt, out.result, "trie beam search");
  out.baseline = std::make_unique<DecodeResult>(batch_beam_search(*s.model, s.prompt, s.beam));
  const auto& m = out.result.metrics;
  const auto& bm = out.baseline->metrics;
  const bool same = out.result.hypotheses.size() == out.baseline->hypotheses.size() &&
                    std::equal(out.result.hypotheses.begin(), out.result.hypotheses.end(), out.baseline->hypotheses.begin(),
                               [](const Hypothesis& a, const Hypothesis& b) { return a.tokens == b.tokens; });
  os << "KV cache after " << m.steps << " steps: trie stores " << m.final_slots << " tokens (peak " << m.peak_slots
     << ", " << m.gc_runs << " GC runs), batch layout stores " << bm.final_slots << " tokens (peak " << bm.peak_slots << ")\n";
  os << "Mem/Tok (KV bytes per input+output token): trie " << std::setprecision(1) << m.mem_per_token << ", batch "
     << bm.mem_per_token << "  (" << std::setprecision(2)
     << (m.mem_per_token > 0 ? bm.mem_per_token / m.mem_per_token : 0.0) << "x)\n";
  os << "model calls: trie " << m.model_calls << " (" << m.computed_tokens << " tokens fed), batch " << bm.model_calls
     << " (" << bm.computed_tokens << " tokens fed)\n";
  os << "outputs identical to batch beam search: " << (same ? "yes" : "NO") << "\n";
  return out;
}

}  // namespace triescope
