// docs/trace-format.md cannot drift: every JSON example in it is a record of
// the sample its marker names, compared with a fresh run, and reads back
// through the trace reader.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <regex>
#include <sstream>

#include "app/commands.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/trace/trace.h"

using namespace triescope;
using nlohmann::json;

namespace {

const std::vector<json>& records_of(const std::string& sample) {
  static std::map<std::string, std::vector<json>> cache;
  auto it = cache.find(sample);
  if (it != cache.end()) return it->second;
  Sample s = sample_load(std::string(TRIESCOPE_SOURCE_DIR "/") + sample);
  MemoryTraceSink sink;
  std::ostringstream os;
  run_sample(s, &sink, os);
  return cache[sample] = sink.records;
}

json without_seconds(json j) {
  if (j.is_object()) {
    j.erase("seconds");
    for (auto& [k, v] : j.items()) v = without_seconds(v);
  }
  return j;
}

}  // namespace

TEST_CASE("registry: every example in docs/trace-format.md is a record of its sample", "[registry][docs]") {
  cli::register_backends();
  std::ifstream in(TRIESCOPE_SOURCE_DIR "/docs/trace-format.md");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const std::regex block(R"(<!-- record: (\S+) (\w+)(?: step=(\d+))?(?: phase=(\w+))? -->\n```json\n([\s\S]*?)\n```)");
  int examples = 0;
  std::set<std::string> kinds;
  for (auto m = std::sregex_iterator(doc.begin(), doc.end(), block); m != std::sregex_iterator(); ++m) {
    const std::string sample = (*m)[1], kind = (*m)[2], step = (*m)[3], phase = (*m)[4];
    CAPTURE(sample, kind, step, phase);
    const json example = json::parse((*m)[5].str());
    const json* found = nullptr;
    for (const json& r : records_of(sample))
      if (r["kind"] == kind && (step.empty() || r["step"] == std::stoi(step)) && (phase.empty() || r["phase"] == phase)) {
        found = &r;
        break;
      }
    REQUIRE(found);
    CHECK(without_seconds(example) == without_seconds(*found));
    // It reads back through the reader, after its sample's header.
    const std::string text = records_of(sample).front().dump() + "\n" + (kind == "header" ? std::string() : example.dump() + "\n");
    CHECK_NOTHROW(trace_parse(text, "docs/trace-format.md"));
    ++examples;
    kinds.insert(kind);
  }
  CHECK(examples >= 12);
  CHECK(kinds == std::set<std::string>{"header", "step", "gc", "keyframe", "summary"});
}
