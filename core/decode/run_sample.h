// A sample file (samples/*.json) names an algorithm, a model, a prompt and the
// algorithm's settings. run_sample() is the one entry point the CLI and the
// GUI's live mode share.
#pragma once
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/decode/beam_config.h"
#include "core/decode/lookahead.h"
#include "core/decode/multigen.h"
#include "core/model/model.h"
#include "core/trace/trace.h"

namespace triescope {

class StaticConstraint;

inline constexpr const char* kSampleFormat = "triescope.sample";
inline constexpr int kSampleVersion = 1;

struct Sample {
  std::string path;
  std::string name;
  std::string description;
  std::string algorithm;  // see kSampleAlgorithms
  json raw;               // the whole file, for algorithm sections
  std::unique_ptr<Model> model;
  std::vector<int32_t> prompt;
  BeamConfig beam;            // beam algorithms
  LookaheadConfig lookahead;  // greedy and lookahead
  MultiGenConfig multigen;    // multigen
  DecodeOptions options;
  // Speculative / DSBD: turns the draft model into the backend's (the cuda
  // backend sets it); empty: the CPU model the sample names.
  std::function<std::unique_ptr<Model>(const Model&)> draft_to_backend;
  std::shared_ptr<StaticConstraint> constraint;  // the sample's "constraint" object (STATIC), if any
};

// Parses and validates a sample; every error names the file and the field.
Sample sample_load(const std::string& path);
Sample sample_parse(const json& j, const std::string& origin);

inline constexpr const char* kSampleAlgorithms = "trie_beam_search, batch_beam_search, beam_sampling, speculative, dsbd, greedy, lookahead, multigen";

struct SampleRun {
  DecodeResult result;            // beam algorithms
  LookaheadResult sequence;       // greedy and lookahead
  MultiGenResult samples;         // multigen
  // Filled for trie_beam_search: the batch baseline run on the same model, so
  // the report can print both layouts' KV figures from one invocation.
  std::unique_ptr<DecodeResult> baseline;
};

// Runs the sample, sending the trace to `trace` (may be null), and writes a
// readable report to `report`.
SampleRun run_sample(Sample& s, TraceSink* trace, std::ostream& report);

// Renders token ids with the model's vocabulary when it has one.
std::string tokens_to_text(const Model& m, const std::vector<int32_t>& tokens);

}  // namespace triescope
