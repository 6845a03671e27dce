// multigen (multigen-structured-masking.md): k samples from one prompt, by
// copies (Method 1), one structured sequence (Method 2) or the hybrid.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/multigen.h"

namespace triescope {
namespace {

void parse(JsonObjectReader& g, const Sample& s, MultiGenConfig& q) {
  q.num_samples = static_cast<int32_t>(g.get_int("num_samples", 1, 1 << 16));
  parse_sequence_limits(g, s, q);
  q.method = parse_named(g, "method", MultiGenMethod::structured, kMultiGenMethodNames);
  if (g.has("sampling")) q.sampling = SamplingConfig::from_json(g.object("sampling"));
}

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const MultiGenConfig& c = s.config_as<SectionConfig<MultiGenConfig>>().decoder;
  os << "algorithm: multigen (" << multigen_method_name(c.method) << "), k " << c.num_samples << ", max_new_tokens "
     << c.max_new_tokens << ", prompt " << s.prompt.size() << " tokens\n";
  const MultiGenResult r = multigen_decode(*s.model, s.prompt, c, trace, s.options);
  SampleRun out{{}, metrics_json(r.metrics.to_json()), nullptr};
  for (size_t i = 0; i < r.samples.size(); ++i) {
    os << "  sample " << i << ": " << tokens_to_text(*s.model, r.samples[i]) << "\n";
    out.outputs.push_back(sequence_output(r.samples[i]));
  }
  // The other two methods on the same RNG stream: the samples must agree.
  bool same = true;
  os << "KV slots at peak:";
  for (const auto& [m, name] : kMultiGenMethodNames) {
    MultiGenConfig other = c;
    other.method = m;
    const MultiGenResult o = m == c.method ? r : multigen_decode(*s.model, s.prompt, other, nullptr, s.options);
    same = same && o.samples == r.samples;
    os << " " << name << " " << o.metrics.peak_slots;
  }
  os << "\nidentical samples across copy / structured / hybrid: " << (same ? "yes" : "NO") << "\n";
  return out;
}

}  // namespace
TRIESCOPE_DEFINE_ALGORITHM(multigen_spec, AlgorithmSpec{
    .name = "multigen",
    .description = "MultiGen: k samples from one prompt by copies, one structured sequence, or the hybrid",
    .sections = {"multigen"},
    .scored = false,
    .parse = section_parser("multigen", parse),
    .run = run,
});
}  // namespace triescope
