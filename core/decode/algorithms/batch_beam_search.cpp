// batch_beam_search: Hugging Face's layout (every beam a full row of the KV
// cache), the baseline the trie paper compares with.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/constraint_report.h"

namespace triescope {
namespace {

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const BeamConfig& c = s.config_as<BeamSection>().beam;
  report_beam_settings(os, s, c);
  const DecodeResult r = batch_beam_search(*s.model, s.prompt, c, trace, s.options, s.constraint.get());
  report_hypotheses(os, s, r.hypotheses, "batch beam search");
  if (s.constraint) static_constraint_report(*s.constraint, r, os);
  os << "KV cache: batch layout holds " << r.metrics.peak_slots << " tokens at its peak (" << r.metrics.peak_bytes << " bytes)\n";
  return {r.hypotheses, metrics_json(r.metrics.to_json()), nullptr};
}

AlgorithmSpec spec() {
  AlgorithmSpec a;
  a.name = "batch_beam_search";
  a.description = "beam search with one KV row per beam (Hugging Face's layout, the trie paper's baseline)";
  a.accepts.constraint = true;
  a.sections = {"beam"};
  a.has_tree = false;
  a.parse = [](JsonObjectReader& r, const Sample& s) {
    auto c = std::make_shared<BeamSection>();
    parse_beam_section(r, s, *c);
    return c;
  };
  a.run = run;
  return a;
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(batch_beam_search_spec, spec());
}  // namespace triescope
