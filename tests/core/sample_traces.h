// Real traces for the trace tests: every bundled sample that needs no
// LibTorch, decoded in-process by run_sample with a GC every 2 steps (beam
// algorithms), a keyframe every 2 steps and at most 40 new beam tokens, plus
// the algorithms no sample names: batch_beam_search (each trie_beam_search
// sample decoded in the batch layout) and greedy (the lookahead sample's model
// and prompt).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope::testing {

struct SampleTrace {
  std::string name;  // the sample's file name, "+batch" / "+greedy" for a derived decode
  std::vector<nlohmann::json> records;
};

const std::vector<SampleTrace>& sample_traces();
// The one named `name` ("figure1_once_upon_a_time.json", "...+batch");
// throws std::out_of_range naming it when there is none.
const SampleTrace& sample_trace(const std::string& name);

// A sample whose model (or draft model) is one these test binaries do not
// link: LibTorch's "transformer" or llama.cpp's "llama_cpp".
inline bool sample_needs_optional_model(const nlohmann::json& j) {
  auto optional = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_object()) return false;
    const std::string type = j[k].value("type", "");
    return type == "transformer" || type == "llama_cpp";
  };
  return optional("model") || optional("draft_model");
}

}  // namespace triescope::testing
