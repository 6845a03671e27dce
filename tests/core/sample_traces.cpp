#include "sample_traces.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/trace/trace.h"

namespace triescope::testing {

namespace {

using nlohmann::json;

SampleTrace decode(json j, const std::string& name) {
  Sample s = sample_parse(j, name);
  MemoryTraceSink sink;
  std::ostringstream report;
  run_sample(s, &sink, report);
  return {name, std::move(sink.records)};
}

}  // namespace

const std::vector<SampleTrace>& sample_traces() {
  static const std::vector<SampleTrace> all = [] {
    std::vector<std::string> paths;
    for (const auto& e : std::filesystem::directory_iterator(TRIESCOPE_SOURCE_DIR "/samples"))
      if (e.path().extension() == ".json") paths.push_back(e.path().string());
    std::sort(paths.begin(), paths.end());
    std::vector<SampleTrace> out;
    for (const std::string& p : paths) {
      json j = json_load_file(p);
      if (sample_needs_optional_model(j)) continue;
      const std::string name = std::filesystem::path(p).filename().string();
      if (!j.contains("trace") || !j["trace"].is_object()) j["trace"] = json::object();
      j["trace"]["keyframe_interval"] = 2;  // Figure 1 (3 steps) gets one before its last
      const bool beam = j.contains("beam") && j["beam"].is_object();
      if (beam && j["beam"].contains("gc_interval")) j["beam"]["gc_interval"] = 2;
      // Long decodes add time, not cases: 40 new tokens cross many GCs and keyframes.
      if (beam && j["beam"].value("max_new_tokens", 0) > 40) j["beam"]["max_new_tokens"] = 40;
      out.push_back(decode(j, p));
      out.back().name = name;
      if (j.value("algorithm", "") == "trie_beam_search") {
        json b = j;
        b["algorithm"] = "batch_beam_search";
        b["beam"].erase("gc_interval");  // one full KV row per beam: no GC, no keyframes
        b.erase("trace");
        out.push_back(decode(b, p));
        out.back().name = name + "+batch";
      }
      if (j.value("algorithm", "") == "lookahead") {
        json g = j;
        g["algorithm"] = "greedy";
        g["greedy"] = {{"max_new_tokens", 40}};
        g.erase("lookahead");
        out.push_back(decode(g, p));
        out.back().name = name + "+greedy";
      }
    }
    return out;
  }();
  return all;
}

const SampleTrace& sample_trace(const std::string& name) {
  for (const SampleTrace& s : sample_traces())
    if (s.name == name) return s;
  throw std::out_of_range("no sample trace " + name);
}

}  // namespace triescope::testing
