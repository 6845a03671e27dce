// multigen (multigen-structured-masking.md): k samples from one prompt, by
// copies (Method 1), one structured sequence (Method 2) or the hybrid.
#include "core/decode/algorithms/sample_report.h"
#include "core/decode/multigen.h"

namespace triescope {
namespace {

struct Config final : AlgorithmConfig {
  MultiGenConfig gen;
};

constexpr std::initializer_list<MultiGenMethod> kMethods = {MultiGenMethod::copy, MultiGenMethod::structured, MultiGenMethod::hybrid};

void parse(JsonObjectReader& r, const Sample& s, Config& c) {
  auto g = r.object("multigen");
  MultiGenConfig& q = c.gen;
  q.num_samples = static_cast<int32_t>(g.get_int("num_samples", 1, 1 << 16));
  const SequenceLimits limits = parse_sequence_limits(g, s);
  q.max_new_tokens = limits.max_new_tokens;
  q.eos_token = limits.eos_token;
  q.method = parse_named(g, "method", MultiGenMethod::structured, kMethods, multigen_method_name);
  if (g.has("sampling")) q.sampling = SamplingConfig::from_json(g.object("sampling"));
  g.finish();
}

SampleRun run(const Sample& s, TraceSink* trace, std::ostream& os) {
  const MultiGenConfig& c = s.config_as<Config>().gen;
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
  for (MultiGenMethod m : kMethods) {
    MultiGenConfig other = c;
    other.method = m;
    const MultiGenResult o = m == c.method ? r : multigen_decode(*s.model, s.prompt, other, nullptr, s.options);
    same = same && o.samples == r.samples;
    os << " " << multigen_method_name(m) << " " << o.metrics.peak_slots;
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
    .parse = config_parser(parse),
    .run = run,
});
}  // namespace triescope
