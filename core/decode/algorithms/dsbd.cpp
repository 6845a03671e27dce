// dsbd (dynamic-width-speculative-beam-decoding.md): a beam-sampling draft
// forest verified layer by layer with a dynamic width, on one token trie.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/dsbd.h"

namespace triescope {
namespace {

struct Config final : BeamSection {
  DsbdConfig dsbd;
};

void parse(JsonObjectReader& r, const Sample& s, Config& c) {
  SamplingConfig sampling;
  parse_speculative_common(r, s, c, sampling);
  c.dsbd = DsbdConfig::from_json(r.object("dsbd"), c.beam.num_beams);
  c.dsbd.max_new_tokens = c.beam.max_new_tokens;
  c.dsbd.sampling = sampling;
}

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const Config& c = s.config_as<Config>();
  report_sampling_settings(os, s, c.beam, c.dsbd.sampling);
  const DsbdResult r = dsbd_decode(*s.model, *s.draft, s.prompt, c.dsbd, trace, s.options);
  report_sampling(os, s, c.beam, r.out);
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
  json metrics = metrics_json(r.out.summary_metrics());
  metrics["dsbd"] = st.to_json();
  return {r.out.decode.hypotheses, std::move(metrics), nullptr};
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(dsbd_spec, AlgorithmSpec{
    .name = "dsbd",
    .description = "dynamic-width speculative beam decoding: a draft forest verified layer by layer (Algorithm 1)",
    .accepts = {.draft_model = true, .sampling = true},
    .sections = {"beam", "sampling", "dsbd"},
    .verify_kind = kVerifyDsbdLayers,
    .parse = config_parser(parse),
    .run = run,
});
}  // namespace triescope
