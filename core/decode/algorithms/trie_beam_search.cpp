// trie_beam_search (trie-beam-search.md): beam search over one token trie and
// one KV cache, reported beside the batch layout on the same model.
#include <algorithm>
#include <iomanip>

#include "core/decode/algorithms/sample_report.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/trie_beam_search.h"

namespace triescope {
namespace {

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const DecodeResult r = beam_decoder_run(os, s, trace, trie_beam_search, "trie beam search");
  const BeamConfig& c = s.config_as<BeamSection>().beam;
  SampleRun out{r.hypotheses, metrics_json(r.metrics.to_json()), nullptr};
  out.baseline = std::make_unique<DecodeResult>(batch_beam_search(*s.model, s.prompt, c, nullptr, s.options, s.constraint.get()));
  const auto& m = r.metrics;
  const auto& bm = out.baseline->metrics;
  const bool same = r.hypotheses.size() == out.baseline->hypotheses.size() &&
                    std::equal(r.hypotheses.begin(), r.hypotheses.end(), out.baseline->hypotheses.begin(),
                               [](const Hypothesis& a, const Hypothesis& b) { return a.tokens == b.tokens; });
  os << "KV cache after " << m.steps << " steps: trie stores " << m.final_slots << " tokens (peak " << m.peak_slots << ", "
     << m.gc_runs << " GC runs), batch layout stores " << bm.final_slots << " tokens (peak " << bm.peak_slots << ")\n";
  os << "Mem/Tok (KV bytes per input+output token): trie " << std::setprecision(1) << m.mem_per_token << ", batch "
     << bm.mem_per_token << "  (" << std::setprecision(2) << (m.mem_per_token > 0 ? bm.mem_per_token / m.mem_per_token : 0.0)
     << "x)\n";
  os << "model calls: trie " << m.model_calls << " (" << m.computed_tokens << " tokens fed), batch " << bm.model_calls << " ("
     << bm.computed_tokens << " tokens fed)\n";
  os << "outputs identical to batch beam search: " << (same ? "yes" : "NO") << "\n";
  return out;
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(trie_beam_search_spec, AlgorithmSpec{
    .name = "trie_beam_search",
    .description = "beam search over one token trie and one KV cache (trie-beam-search.md, Algorithm 2)",
    .accepts = {.constraint = true},
    .sections = {"beam"},
    .seams = {"mask", "selection"},
    .parse = config_parser(parse_beam_section),
    .run = run,
});
}  // namespace triescope
