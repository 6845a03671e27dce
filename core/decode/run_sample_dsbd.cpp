#include "core/decode/run_sample_dsbd.h"

#include <iomanip>

#include "core/common/error.h"
#include "core/decode/dsbd.h"
#include "core/decode/speculative.h"
#include "core/model/model_factory.h"

namespace triescope {

namespace {
struct SamplingSample {
  SamplingConfig sampling;
  std::unique_ptr<Model> draft;
  SpeculativeConfig spec;
  DsbdConfig dsbd;
};

SamplingSample read(const json& raw, const std::string& origin, const Sample& s) {
  JsonObjectReader r(raw, origin);
  SamplingSample out;
  if (r.has("sampling")) out.sampling = SamplingConfig::from_json(r.object("sampling"));
  if (s.algorithm == "beam_sampling") {
    TS_CHECK(!r.has("draft_model"), r.where("draft_model") << " is not used by beam_sampling");
    return out;
  }
  TS_CHECK(!out.sampling.deterministic, r.where("sampling.deterministic") << " is only supported by beam_sampling");
  TS_CHECK(r.has("draft_model"), origin << ": algorithm " << s.algorithm << " needs a draft_model object");
  out.draft = model_from_json(r.object("draft_model"));
  TS_CHECK(out.draft->vocab_size() == s.model->vocab_size(),
           r.where("draft_model.vocab_size") << " = " << out.draft->vocab_size() << " differs from model.vocab_size " << s.model->vocab_size());
  TS_CHECK(s.beam.eos_token < 0, r.where("beam.eos_token") << " is not supported by " << s.algorithm);
  if (s.algorithm == "speculative") {
    auto sp = r.object("speculative");
    out.spec.gamma = static_cast<int32_t>(sp.get_int("gamma", 1, 64));
    sp.finish();
    out.spec.max_new_tokens = s.beam.max_new_tokens;
    out.spec.sampling = out.sampling;
  } else {
    out.dsbd = DsbdConfig::from_json(r.object("dsbd"), s.beam.num_beams);
    out.dsbd.max_new_tokens = s.beam.max_new_tokens;
    out.dsbd.sampling = out.sampling;
  }
  return out;
}

void report_outputs(std::ostream& os, const Model& model, const Sample& s, const SamplingDecodeResult& r) {
  os << s.algorithm << ": " << r.decode.hypotheses.size() << " distinct final beams, best first\n";
  for (size_t i = 0; i < r.decode.hypotheses.size(); ++i) {
    const auto& h = r.decode.hypotheses[i];
    os << "  #" << i + 1 << "  target log-likelihood " << std::fixed << std::setprecision(4) << h.sum_logprobs << " ("
       << h.score << " per token)  | " << tokens_to_text(model, s.prompt) << " | " << tokens_to_text(model, h.tokens) << "\n";
  }
  const double steps = std::max(1, s.beam.max_new_tokens);
  os << "target forward passes: " << r.sampling.target_calls << " (" << std::setprecision(3)
     << static_cast<double>(r.sampling.target_calls) / steps << " per output step, prefill included)";
  if (r.sampling.draft_calls) os << ", draft forward passes: " << r.sampling.draft_calls;
  os << "\n";
}
}  // namespace

bool sample_algorithm_is_sampling(const std::string& a) { return a == "beam_sampling" || a == "speculative" || a == "dsbd"; }

void sample_sampling_check(JsonObjectReader& r, const Sample& s) {
  for (const char* k : {"sampling", "draft_model", "speculative", "dsbd"})
    if (r.has(k)) r.raw(k);
  (void)read(s.raw, s.path, s);
}

SampleRun run_sample_sampling(Sample& s, TraceSink* trace, std::ostream& os) {
  SamplingSample x = read(s.raw, s.path, s);
  if (x.draft && s.draft_to_backend) x.draft = s.draft_to_backend(*x.draft);  // the draft runs where the target runs
  SampleRun out;
  os << "sampling: temperature " << x.sampling.temperature << ", top_k " << x.sampling.top_k << ", top_p " << x.sampling.top_p
     << ", seed " << x.sampling.seed << (x.sampling.deterministic ? ", deterministic (top-W)" : "") << "\n";
  if (s.algorithm == "beam_sampling") {
    BeamConfig cfg = s.beam;
    SamplingDecodeResult r = beam_sampling(*s.model, s.prompt, cfg, x.sampling, trace, s.options);
    report_outputs(os, *s.model, s, r);
    os << "KV cache: trie holds " << r.decode.metrics.peak_slots << " slots at its peak, batch layout " << r.decode.metrics.batch_peak_slots << "\n";
    out.result = r.decode;
    return out;
  }
  if (s.algorithm == "speculative") {
    SamplingDecodeResult r = speculative_decode(*s.model, *x.draft, s.prompt, x.spec, trace, s.options);
    report_outputs(os, *s.model, s, r);
    os << "iterations " << r.sampling.iterations << ", draft tokens accepted " << r.sampling.layers_accepted << " of "
       << r.sampling.layers_verified << "\n";
    out.result = r.decode;
    return out;
  }
  DsbdResult r = dsbd_decode(*s.model, *x.draft, s.prompt, x.dsbd, trace, s.options);
  report_outputs(os, *s.model, s, r.out);
  const DsbdStats& st = r.stats;
  os << "iterations " << st.iterations << "; steps per full iteration "
     << (st.full_iterations ? static_cast<double>(st.steps_in_full_iterations) / static_cast<double>(st.full_iterations) : 0.0)
     << "; layers passed / verified:";
  for (size_t l = 0; l < st.layer_verified.size(); ++l) os << " L" << l + 1 << " " << st.layer_accepted[l] << "/" << st.layer_verified[l];
  int64_t verified = 0;
  for (int64_t v : st.layer_verified) verified += v;
  os << "; mean W_L " << (verified ? static_cast<double>(st.width_sum) / static_cast<double>(verified) : 0.0) << "\n";
  os << "KV slots (target cache) at peak: shared trie " << st.shared_peak_slots << ", one cache per input beam (paper) "
     << st.paper_peak_slots << "\n";
  out.result = r.out.decode;
  return out;
}

}  // namespace triescope
