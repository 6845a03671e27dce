// The algorithm registry: one spec per decoding algorithm, so the CLI, the
// CUDA backend, the GUI and the tests iterate it instead of naming
// algorithms. Adding an algorithm is one more file that defines its spec and
// registers it with TRIESCOPE_REGISTER_ALGORITHM (core/decode/algorithms/
// holds the built-in ones; tests/core/test_toy_algorithm.cpp adds one).
#pragma once
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/spec_registry.h"
#include "core/config/json_reader.h"
#include "core/decode/beam_config.h"
#include "core/decode/decode_result.h"
#include "core/trace/trace.h"

namespace triescope {

struct Sample;

// What a sample may hold beside schema, name, model, prompt and trace.
struct AlgorithmAccepts {
  bool constraint = false;   // a STATIC "constraint" object (core/constraint/)
  bool draft_model = false;  // a "draft_model" object: required when true, refused otherwise
  bool sampling = false;     // a top-level "sampling" object (warp and seed)
};

// An algorithm's parsed sections of a sample; each algorithm derives its own.
struct AlgorithmConfig {
  virtual ~AlgorithmConfig() = default;
};

// The config of every beam algorithm derives from this: its "beam" section.
struct BeamSection : AlgorithmConfig {
  BeamConfig beam;
};

// What one run of a sample produced, the same for every algorithm.
struct SampleRun {
  // Best first: the hypotheses (beam algorithms), the one sequence (greedy,
  // lookahead, speculative), one entry per sample (multigen).
  std::vector<Hypothesis> outputs;
  // The decoder's own metrics (its result's to_json(), without seconds): the
  // property tests compare them with what the trace's records add up to.
  nlohmann::json metrics;
  // Filled by trie_beam_search: the batch baseline on the same model, so the
  // report prints both layouts' KV figures from one invocation.
  std::unique_ptr<DecodeResult> baseline;
};

// Reads an algorithm's sections of a sample (AlgorithmSpec::parse).
using AlgorithmParse = std::function<std::shared_ptr<const AlgorithmConfig>(JsonObjectReader& sample, const Sample& s)>;

// The parse of an algorithm whose config is `Config`: a fresh one filled by
// `read`, so an algorithm states only what it reads.
//   .parse = config_parser(parse_beam_section),
template <class Config>
AlgorithmParse config_parser(void (*read)(JsonObjectReader& sample, const Sample& s, Config& out)) {
  return [read](JsonObjectReader& sample, const Sample& s) -> std::shared_ptr<const AlgorithmConfig> {
    auto c = std::make_shared<Config>();
    read(sample, s, *c);
    return c;
  };
}

// The config of an algorithm that reads one section object of a sample into
// one decoder config (greedy: "greedy" into a GreedyConfig), read back as
// s.config_as<SectionConfig<GreedyConfig>>().decoder.
template <class DecoderConfig>
struct SectionConfig final : AlgorithmConfig {
  DecoderConfig decoder;
};

// The parse of such an algorithm: opens the object `section`, fills a fresh
// SectionConfig with `read` and refuses any key of `section` it left unread.
//   .parse = section_parser("greedy", parse_sequence_limits<GreedyConfig>),
template <class DecoderConfig>
AlgorithmParse section_parser(const char* section, void (*read)(JsonObjectReader& object, const Sample& s, DecoderConfig& out)) {
  return [section, read](JsonObjectReader& sample, const Sample& s) -> std::shared_ptr<const AlgorithmConfig> {
    auto c = std::make_shared<SectionConfig<DecoderConfig>>();
    JsonObjectReader r = sample.object(section);
    read(r, s, c->decoder);
    r.finish();
    return c;
  };
}

struct AlgorithmSpec {
  std::string name;         // the sample's "algorithm" and the trace header's
  std::string description;  // one line: the paper and what the algorithm does
  AlgorithmAccepts accepts{};  // none by default
  // The sample objects parse() reads (its sections), for messages and docs.
  std::vector<std::string> sections;
  // Node logprobs in the trace are scores (false: greedy, lookahead,
  // multigen draw tokens without scoring them).
  bool scored = true;
  // The trace holds a token tree and keyframes (false: batch beam search,
  // whose layout is b full rows).
  bool has_tree = true;
  // verify.kind of its step records (kVerify* in core/trace/trace.h); empty: none.
  std::string verify_kind{};
  // The backend seams its run calls besides its models, its verify kind and
  // a constraint (core/decode/backend.h, BackendSupport): "mask"
  // (DecodeOptions::make_mask), "selection" (make_selector), "greedy_argmax".
  std::vector<std::string> seams{};
  // Reads the algorithm's sections from the sample (marking them used in
  // `sample`); every error names the file and the field. `s` already holds
  // the path, model, draft model and prompt.
  AlgorithmParse parse;
  // Runs the sample (models already on their backend), recording to `trace`
  // (may be null), and writes a readable report.
  std::function<SampleRun(const Sample& s, TraceSink* trace, std::ostream& report)> run;
};

// Adds a spec; throws Error when the name is taken or a field is missing.
void algorithm_register(AlgorithmSpec spec);
// The spec named `name`, or null.
const AlgorithmSpec* algorithm_find(std::string_view name);
// Every registered spec, by name.
std::vector<const AlgorithmSpec*> algorithms();
// "a, b, c": the registered names, for error messages.
std::string algorithm_names();
// The names of the registered algorithms accepting what `pred` says.
std::string algorithm_names_if(const std::function<bool(const AlgorithmSpec&)>& pred);

using AlgorithmRegistrar = SpecRegistrar<AlgorithmSpec, algorithm_register>;

}  // namespace triescope

// At namespace scope in the algorithm's file: TRIESCOPE_REGISTER_ALGORITHM(spec_function());
#define TRIESCOPE_REGISTER_ALGORITHM(spec) \
  static const ::triescope::AlgorithmRegistrar TRIESCOPE_SPEC_REGISTRAR_NAME(triescope_algorithm_registrar_)(spec)
// The same for a built-in decoder, whose header declares `accessor` (the
// decoder heads its trace with the spec's name and verify kind): defines it
// in namespace triescope and registers the spec that follows.
//   TRIESCOPE_DEFINE_ALGORITHM(greedy_spec, AlgorithmSpec{.name = "greedy", ...});
#define TRIESCOPE_DEFINE_ALGORITHM(accessor, ...)            \
  const ::triescope::AlgorithmSpec& accessor() {             \
    static const ::triescope::AlgorithmSpec s = __VA_ARGS__; \
    return s;                                                \
  }                                                          \
  TRIESCOPE_REGISTER_ALGORITHM(accessor())
