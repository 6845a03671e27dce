// batch_beam_search: Hugging Face's layout (every beam a full row of the KV
// cache), the baseline the trie paper compares with.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/batch_beam_search.h"

namespace triescope {
namespace {

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const DecodeResult r = beam_decoder_run(os, s, trace, batch_beam_search, "batch beam search");
  os << "KV cache: batch layout holds " << r.metrics.peak_slots << " tokens at its peak (" << r.metrics.peak_bytes << " bytes)\n";
  return {r.hypotheses, metrics_json(r.metrics.to_json()), nullptr};
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(batch_beam_search_spec, AlgorithmSpec{
    .name = "batch_beam_search",
    .description = "beam search with one KV row per beam (Hugging Face's layout, the trie paper's baseline)",
    .accepts = {.constraint = true},
    .sections = {"beam"},
    .has_tree = false,
    .seams = {"selection"},
    .parse = config_parser(parse_beam_section),
    .run = run,
});
}  // namespace triescope
