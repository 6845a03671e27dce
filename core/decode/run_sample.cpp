#include "core/decode/run_sample.h"

#include <iomanip>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/constraint/static_constraint.h"
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
  const bool sampling_algo = sample_algorithm_is_sampling(s.algorithm);
  const bool beam_algo = s.algorithm == "trie_beam_search" || s.algorithm == "batch_beam_search" || sampling_algo;
  const bool seq_algo = s.algorithm == "greedy" || s.algorithm == "lookahead";
  const bool multigen = s.algorithm == "multigen";
  TS_CHECK(beam_algo || seq_algo || multigen,
           r.where("algorithm") << " must be one of " << kSampleAlgorithms << ", got \"" << s.algorithm << "\"");
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
  if (beam_algo) s.beam = BeamConfig::from_json(r.object("beam"), V);
  if (seq_algo) {
    auto l = r.object(s.algorithm == "greedy" ? "greedy" : "lookahead");
    LookaheadConfig& c = s.lookahead;
    c.max_new_tokens = static_cast<int32_t>(l.get_int("max_new_tokens", 1, 1 << 20));
    c.eos_token = static_cast<int32_t>(l.get_int("eos_token", -1, V - 1, -1));
    if (s.algorithm == "lookahead") {
      c.window = static_cast<int32_t>(l.get_int("window", 0, 4096, c.window));
      c.ngram = static_cast<int32_t>(l.get_int("ngram", 2, 64, c.ngram));
      c.max_candidates = static_cast<int32_t>(l.get_int("max_candidates", 0, 4096, c.max_candidates));
      c.pool_per_key = static_cast<int32_t>(l.get_int("pool_per_key", 1, 1 << 16, c.pool_per_key));
      c.trie_depth = static_cast<int32_t>(l.get_int("trie_depth", 1, 4096, c.trie_depth));
      c.trie_nodes = static_cast<int32_t>(l.get_int("trie_nodes", 1, 1 << 20, c.trie_nodes));
      c.seed = static_cast<uint64_t>(l.get_int("seed", 0, INT64_MAX, 1));
      const std::string v = l.get_string("verify", "trie");
      TS_CHECK(v == "trie" || v == "independent" || v == "greedy_only",
               l.where("verify") << " must be trie, independent or greedy_only, got \"" << v << "\"");
      c.verify = v == "trie" ? LookaheadVerify::trie : v == "independent" ? LookaheadVerify::independent : LookaheadVerify::greedy_only;
    }
    l.finish();
  }
  if (multigen) {
    auto g = r.object("multigen");
    MultiGenConfig& c = s.multigen;
    c.num_samples = static_cast<int32_t>(g.get_int("num_samples", 1, 1 << 16));
    c.max_new_tokens = static_cast<int32_t>(g.get_int("max_new_tokens", 1, 1 << 20));
    c.eos_token = static_cast<int32_t>(g.get_int("eos_token", -1, V - 1, -1));
    const std::string method = g.get_string("method", "structured");
    TS_CHECK(method == "copy" || method == "structured" || method == "hybrid",
             g.where("method") << " must be copy, structured or hybrid, got \"" << method << "\"");
    c.method = method == "copy" ? MultiGenMethod::copy : method == "hybrid" ? MultiGenMethod::hybrid : MultiGenMethod::structured;
    if (g.has("sampling")) c.sampling = SamplingConfig::from_json(g.object("sampling"));
    g.finish();
  }
  if (sampling_algo) sample_sampling_check(r, s);
  if (r.has("trace")) {
    auto t = r.object("trace");
    s.options.keyframe_interval = static_cast<int32_t>(t.get_int("keyframe_interval", 0, 1 << 20, 16));
    t.finish();
  }
  if (r.has("constraint")) s.constraint = static_constraint_from_json(r.object("constraint"), V, origin);
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

SampleRun run_sequence_sample(Sample& s, TraceSink* trace, std::ostream& os) {
  SampleRun out;
  const LookaheadConfig& c = s.lookahead;
  os << "algorithm: " << s.algorithm << ", max_new_tokens " << c.max_new_tokens << ", prompt " << s.prompt.size() << " tokens";
  if (s.algorithm == "lookahead")
    os << ", W " << c.window << ", N " << c.ngram << ", G " << c.max_candidates << ", D " << c.trie_depth << ", B "
       << c.trie_nodes;
  os << "\n";
  const LookaheadResult greedy = greedy_decode(*s.model, s.prompt, c.max_new_tokens, c.eos_token, s.algorithm == "greedy" ? trace : nullptr,
                                                s.options);
  if (s.algorithm == "greedy") {
    out.sequence = greedy;
  } else {
    out.sequence = lookahead_decode(*s.model, s.prompt, c, trace, s.options);
    LookaheadConfig ind = c;
    ind.verify = LookaheadVerify::independent;
    const LookaheadResult base = lookahead_decode(*s.model, s.prompt, ind, nullptr, s.options);
    const auto& m = out.sequence.metrics;
    os << "lookahead (" << (c.verify == LookaheadVerify::trie ? "trie" : c.verify == LookaheadVerify::independent ? "independent" : "greedy_only")
       << " verification): " << m.generated << " tokens in " << m.steps << " steps, " << m.computed_decode
       << " tokens computed after the prefill (" << m.lookahead_tokens << " lookahead, " << m.verify_tokens << " verification)\n";
    os << "independent-candidate baseline: " << base.metrics.steps << " steps, " << base.metrics.computed_decode
       << " computed (" << base.metrics.verify_tokens << " verification)\n";
    os << "greedy: " << greedy.metrics.steps + 1 << " forward passes, " << greedy.metrics.computed_decode << " computed\n";
    os << "output identical to greedy decoding: " << (out.sequence.tokens == greedy.tokens ? "yes" : "NO") << "\n";
  }
  os << "output: " << tokens_to_text(*s.model, out.sequence.tokens) << "\n";
  return out;
}

SampleRun run_multigen_sample(Sample& s, TraceSink* trace, std::ostream& os) {
  SampleRun out;
  const MultiGenConfig& c = s.multigen;
  os << "algorithm: multigen (" << multigen_method_name(c.method) << "), k " << c.num_samples << ", max_new_tokens "
     << c.max_new_tokens << ", prompt " << s.prompt.size() << " tokens\n";
  out.samples = multigen_decode(*s.model, s.prompt, c, trace, s.options);
  for (size_t i = 0; i < out.samples.samples.size(); ++i)
    os << "  sample " << i << ": " << tokens_to_text(*s.model, out.samples.samples[i]) << "\n";
  // The other two methods on the same RNG stream: the samples must agree.
  bool same = true;
  os << "KV slots at peak:";
  for (MultiGenMethod m : {MultiGenMethod::copy, MultiGenMethod::structured, MultiGenMethod::hybrid}) {
    MultiGenConfig other = c;
    other.method = m;
    const MultiGenResult r = m == c.method ? out.samples : multigen_decode(*s.model, s.prompt, other, nullptr, s.options);
    same = same && r.samples == out.samples.samples;
    os << " " << multigen_method_name(m) << " " << r.metrics.peak_slots;
  }
  os << "\nidentical samples across copy / structured / hybrid: " << (same ? "yes" : "NO") << "\n";
  return out;
}

}  // namespace

SampleRun run_sample(Sample& s, TraceSink* trace, std::ostream& os) {
  SampleRun out;
  os << "sample: " << s.name << " (" << s.path << ")\n";
  if (!s.description.empty()) os << "  " << s.description << "\n";
  if (s.algorithm == "greedy" || s.algorithm == "lookahead") return run_sequence_sample(s, trace, os);
  if (s.algorithm == "multigen") return run_multigen_sample(s, trace, os);
  os << "algorithm: " << s.algorithm << ", beams " << s.beam.num_beams << ", max_new_tokens " << s.beam.max_new_tokens
     << ", gc_interval " << s.beam.gc_interval << ", prompt " << s.prompt.size() << " tokens\n";
  if (sample_algorithm_is_sampling(s.algorithm)) return run_sample_sampling(s, trace, os);
  if (s.algorithm == "batch_beam_search") {
    out.result = batch_beam_search(*s.model, s.prompt, s.beam, trace, s.options, s.constraint.get());
    report_result(os, *s.model, s.prompt, out.result, "batch beam search");
    if (s.constraint) static_constraint_report(*s.constraint, out.result, os);
    const auto& m = out.result.metrics;
    os << "KV cache: batch layout holds " << m.peak_slots << " tokens at its peak (" << m.peak_bytes << " bytes)\n";
    return out;
  }
  out.result = trie_beam_search(*s.model, s.prompt, s.beam, trace, s.options, s.constraint.get());
  report_result(os, *s.model, s.prompt, out.result, "trie beam search");
  if (s.constraint) static_constraint_report(*s.constraint, out.result, os);
  out.baseline = std::make_unique<DecodeResult>(batch_beam_search(*s.model, s.prompt, s.beam, nullptr, s.options, s.constraint.get()));
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
