// The algorithm registry end to end: a toy algorithm registered in one file
// (toy_algorithm.cpp) runs through the CLI, writes a complete trace, is
// inspected and diffed; every registered algorithm's traces, on every
// bundled sample it can run, pass the trace properties; a sample asking for
// something its algorithm does not accept is refused by name.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "app/commands.h"
#include "core/analysis/forward_layout.h"
#include "core/analysis/verify_info.h"
#include "core/analysis/verify_kind.h"
#include "core/decode/dsbd.h"
#include "core/decode/lookahead.h"
#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/model/model_factory.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "tests/registry/toy_drafting.h"
#include "tests/registry/trace_properties.h"

using namespace triescope;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

int run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "triescope");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::cli_main(static_cast<int>(argv.size()), argv.data());
}

fs::path work_dir(const std::string& name) {
  const fs::path d = fs::path(TRIESCOPE_BINARY_DIR) / "tests" / "registry_work" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

json toy_sample() {
  json j = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/lookahead_repetitive.json");
  j.erase("lookahead");
  j["algorithm"] = "toy_two_branch";
  j["name"] = "toy";
  j["toy"] = {{"max_new_tokens", 12}};
  j["trace"] = {{"keyframe_interval", 5}};
  return j;
}

// The toy drafting algorithm (toy_drafting.h) on the same repetitive model.
json toy_guess_sample() {
  json j = toy_sample();
  j.erase("toy");
  j["algorithm"] = "toy_guess";
  j["name"] = "toy_guess";
  j["toy_guess"] = {{"iterations", 24}};
  return j;
}

void write(const fs::path& p, const json& j) {
  std::ofstream(p) << j.dump(1);
}

struct Variant {
  std::string label;
  json sample;
  std::string origin = TRIESCOPE_SOURCE_DIR "/samples/variant.json";  // relative paths resolve in samples/
};

// Every bundled sample that runs here, plus the same files re-targeted at
// the algorithms sharing their sections, so every registered algorithm runs.
std::vector<Variant> variants() {
  std::vector<Variant> out;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(TRIESCOPE_SOURCE_DIR "/samples"))
    if (e.path().extension() == ".json") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    json j = json_load_file(p.string());
    const json& model = j["model"];
    if (model.contains("path") && !fs::is_directory(p.parent_path() / model["path"].get<std::string>()) &&
        !fs::is_directory(model["path"].get<std::string>()))
      continue;  // bring-your-own model, not installed here
    const std::string name = p.filename().string(), algo = j["algorithm"];
    out.push_back({name, j});
    if (algo == "trie_beam_search" || algo == "batch_beam_search") {
      json o = j;
      o["algorithm"] = algo == "trie_beam_search" ? "batch_beam_search" : "trie_beam_search";
      if (o["algorithm"] == "batch_beam_search") o.erase("trace");
      out.push_back({name + " as " + o["algorithm"].get<std::string>(), o});
    }
    if (algo == "lookahead") {
      json g = j;
      g["algorithm"] = "greedy";
      g["greedy"] = {{"max_new_tokens", j["lookahead"]["max_new_tokens"]}};
      g.erase("lookahead");
      out.push_back({name + " as greedy", g});
      for (const char* v : {"independent", "greedy_only"}) {
        json l = j;
        l["lookahead"]["verify"] = v;
        out.push_back({name + " verify " + v, l});
      }
    }
    if (algo == "multigen")
      for (const char* m : {"copy", "structured", "hybrid"})
        for (int eos : {-1, 1}) {
          json g = j;
          g["multigen"]["method"] = m;
          g["multigen"]["eos_token"] = eos;
          out.push_back({name + " " + m + (eos >= 0 ? " with EOS" : ""), g});
        }
  }
  // Trie beam search, b = 4, with EOS drawn half the time (issue 15, defect 1).
  json eos = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/synthetic_long.json");
  eos["model"] = {{"type", "synthetic"}, {"vocab_size", 32}, {"seed", 7}, {"eos_token", 31}, {"eos_rate", 0.5}};
  eos["prompt"] = {1, 2, 3};
  eos["beam"] = {{"num_beams", 4}, {"max_new_tokens", 12}, {"eos_token", 31}, {"early_stopping", "never"}, {"gc_interval", 1}};
  eos["trace"] = {{"keyframe_interval", 1}};
  out.push_back({"trie b=4 EOS 0.5", eos});
  out.push_back({"toy", toy_sample()});
  out.push_back({"toy_guess", toy_guess_sample()});
  return out;
}

}  // namespace

TEST_CASE("registry: a toy algorithm in one file runs through the CLI, writes a complete trace, is inspected and diffed",
          "[registry][cli]") {
  cli::register_backends();
  REQUIRE(algorithm_find("toy_two_branch"));
  const fs::path d = work_dir("toy_cli");
  write(d / "toy.json", toy_sample());
  const std::string a = (d / "a.jsonl").string(), b = (d / "b.jsonl").string();
  REQUIRE(run_cli({"run", (d / "toy.json").string(), "--out", a, "--quiet"}) == 0);
  REQUIRE(run_cli({"run", (d / "toy.json").string(), "--out", b, "--quiet"}) == 0);
  const std::vector<json> records = trace_read(a);
  testing::check_trace_properties(records, *algorithm_find("toy_two_branch"), 5, records.back()["metrics"]);
  CHECK(run_cli({"diff", a, b}) == 0);
  CHECK(run_cli({"inspect", a, "--step", "7"}) == 0);
  // Replay agrees with every keyframe the recorder wrote.
  TraceReplay replay(records, a);
  CHECK(replay.steps().size() == 13);
  // A changed decode diverges.
  json other = toy_sample();
  other["toy"]["max_new_tokens"] = 11;
  write(d / "other.json", other);
  const std::string c = (d / "c.jsonl").string();
  REQUIRE(run_cli({"run", (d / "other.json").string(), "--out", c, "--quiet"}) == 0);
  CHECK(run_cli({"diff", a, c}) == 1);
  // The CLI's help lists it with the built-in ones.
  std::ostringstream names;
  for (const AlgorithmSpec* s : algorithms()) names << s->name << " ";
  CHECK_THAT(names.str(), Catch::Contains("toy_two_branch") && Catch::Contains("trie_beam_search"));
}

TEST_CASE("registry: every algorithm's traces on every sample it runs keep the trace properties", "[registry][trace]") {
  cli::register_backends();
  std::set<std::string> covered;
  for (const Variant& v : variants()) {
    CAPTURE(v.label);
#ifndef TRIESCOPE_WITH_TORCH
    // Builds without LibTorch (tests/sanitize's) have no transformer model.
    if (v.sample["model"].value("type", "") == "transformer") continue;
#endif
    Sample s = sample_parse(v.sample, v.origin);
    MemoryTraceSink sink;
    std::ostringstream report;
    const SampleRun run = run_sample(s, &sink, report);
    testing::check_trace_properties(sink.records, *s.spec, s.options.keyframe_interval, run.metrics);
    // The recorded trace reads back and replays at every step.
    TraceReplay replay(sink.records, v.label);
    for (int32_t step : replay.steps()) CHECK_NOTHROW(replay.at(step));
    covered.insert(s.algorithm);
  }
  for (const AlgorithmSpec* a : algorithms()) {
    CAPTURE(a->name);
    CHECK(covered.count(a->name));
  }
}

TEST_CASE("registry: beam sampling and trie beam search count the batch layout's prefill alike (defect 4)", "[registry][trace]") {
  json j = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/beam_sampling_synthetic.json");
  auto prefill_batch = [&](const json& sample) {
    Sample s = sample_parse(sample, "prefill");
    MemoryTraceSink sink;
    std::ostringstream os;
    run_sample(s, &sink, os);
    return sink.records.at(1)["kv"]["batch_slots"].get<int64_t>();
  };
  const int64_t b = j["beam"]["num_beams"], n = static_cast<int64_t>(j["prompt"].size());
  CHECK(prefill_batch(j) == b * n);
  json t = j;
  t["algorithm"] = "trie_beam_search";
  t.erase("sampling");
  CHECK(prefill_batch(t) == b * n);
}

TEST_CASE("registry: trie beam search prunes a node whose children are EOS-finished and pruned (defect 1)", "[registry][trace]") {
  // samples/synthetic_long.json, step 144: nodes 2126 and 2139 were left
  // live with their slots collected.
  Sample s = sample_load(TRIESCOPE_SOURCE_DIR "/samples/synthetic_long.json");
  MemoryTraceSink sink;
  std::ostringstream os;
  run_sample(s, &sink, os);
  TraceReplay replay(sink.records, "synthetic_long");
  const StepView v = replay.at(144);
  for (int32_t id : {2126, 2139}) {
    CAPTURE(id);
    REQUIRE(static_cast<size_t>(id) < v.nodes.size());
    CHECK(v.nodes[static_cast<size_t>(id)].status == NodeStatus::pruned);
  }
  for (const TreeNode& n : v.nodes)
    if (n.status == NodeStatus::live) CHECK(n.slot >= 0);
}

TEST_CASE("registry: a sample asking for what its algorithm does not accept is refused by name", "[registry][samples]") {
  const json look = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/lookahead_repetitive.json");
  auto refuse = [](json j, const std::string& what) {
    CAPTURE(what);
    CHECK_THROWS_WITH(sample_parse(j, "x.json"), Catch::Contains("x.json") && Catch::Contains(what));
  };
  json c = look;
  c["constraint"] = {{"type", "static"}};
  refuse(c, "constraint: algorithm lookahead does not accept a constraint (algorithms that do: batch_beam_search, trie_beam_search)");
  json d = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/figure1_once_upon_a_time.json");
  d["draft_model"] = d["model"];
  refuse(d, "draft_model: algorithm trie_beam_search does not accept a draft_model (algorithms that do: dsbd, speculative)");
  json m = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/multigen_figure1.json");
  m["sampling"] = {{"seed", 1}};
  refuse(m, "sampling: algorithm multigen does not accept a sampling");
  json bb = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/figure1_once_upon_a_time.json");
  bb["algorithm"] = "batch_beam_search";
  bb["trace"] = {{"keyframe_interval", 4}};
  refuse(bb, "trace.keyframe_interval: algorithm batch_beam_search records no token tree");
  json sp = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/speculative_synthetic.json");
  sp.erase("draft_model");
  refuse(sp, "algorithm speculative needs a draft_model object");
  json u = look;
  u["algorithm"] = "no_such";
  refuse(u, "algorithm must be one of batch_beam_search, beam_sampling, dsbd, greedy, lookahead, multigen");
}

TEST_CASE("registry: a version-1 lookahead trace (gc after its pass) reads, verifies and inspects against the pre-gc layout",
          "[registry][trace]") {
  cli::register_backends();
  Sample s = sample_load(TRIESCOPE_SOURCE_DIR "/samples/lookahead_repetitive.json");
  MemoryTraceSink sink;
  std::ostringstream os;
  run_sample(s, &sink, os);
  // Rewrite as version 1 wrote it: no kinds, no keyframes, each compaction as
  // the gc of the step whose pass it follows, after that step's record.
  std::vector<json> v1;
  for (const json& r : sink.records) {
    if (r["kind"] == "keyframe") continue;
    json x = r;
    if (x["kind"] == "header") {
      x["version"] = 1;
      x.erase("verify_kind");
    }
    if (x["kind"] == "step" && x.contains("verify")) x["verify"].erase("kind");
    if (x["kind"] == "summary") x["metrics"].erase("last_step");
    if (x["kind"] == "gc") {
      x["step"] = x["step"].get<int64_t>() - 1;
      json step = v1.back();  // the step record it follows now
      v1.back() = x;
      v1.push_back(step);
      std::swap(v1[v1.size() - 1], v1[v1.size() - 2]);
      continue;
    }
    v1.push_back(x);
  }
  CHECK(trace_verify_kind(v1.front()) == kVerifyLookahead);
  const std::set<int32_t> after = trace_gc_after_forward_steps(v1);
  CHECK(after.size() == 98);
  TraceReplay old(v1, "v1.jsonl"), now(sink.records, "v2.jsonl");
  for (int32_t step : old.steps()) {
    CAPTURE(step);
    const StepView a = old.at(step), b = now.at(step);
    // The layout the pass read, rebuilt for v1, is the v2 view's layout.
    const ForwardLayout la = forward_layout(a, after.count(step) > 0);
    CHECK(la.before_gc == (after.count(step) > 0));
    if (a.forward) {
      for (size_t r = 0; r < a.forward->queries.size(); ++r) CHECK(la.node_in_slot(a.forward->slots[r]) == a.forward->queries[r]);
      for (int32_t c = 0; c < a.forward->mask.cols; ++c) CHECK(la.node_in_slot(c) == b.slot_to_node.at(static_cast<size_t>(c)));
    }
    const VerifyInfo vi = verify_info(a, old);
    if (step > 0) CHECK(vi.kind == kVerifyLookahead);
    CHECK(vi.error.empty());
  }
  const fs::path d = work_dir("v1_lookahead");
  {
    std::ofstream f(d / "v1.jsonl");
    for (const json& r : v1) f << r.dump() << "\n";
  }
  CHECK(run_cli({"inspect", (d / "v1.jsonl").string(), "--step", "5"}) == 0);
  CHECK(run_cli({"check", (d / "v1.jsonl").string()}) == 0);  // every row against the rebuilt pre-gc layout
}

namespace {
int g_models_built = 0;
// A "counted" model: the synthetic model, counting how often one is built.
std::unique_ptr<Model> build_counted(JsonObjectReader& r) {
  ++g_models_built;
  SyntheticConfig c;
  c.vocab_size = static_cast<int32_t>(r.get_int("vocab_size", 2, 1 << 20));
  c.seed = static_cast<uint64_t>(r.get_int("seed", 0, INT32_MAX, 1));
  r.finish();
  return std::make_unique<SyntheticModel>(c);
}
}  // namespace

TEST_CASE("registry: each model of a sample is built once, draft included", "[registry][samples]") {
  model_type_register("counted", &build_counted);
  for (const char* name : {"speculative_synthetic.json", "dsbd_synthetic.json", "synthetic_long.json"}) {
    CAPTURE(name);
    json j = json_load_file(std::string(TRIESCOPE_SOURCE_DIR "/samples/") + name);
    j["model"] = {{"type", "counted"}, {"vocab_size", j["model"]["vocab_size"]}, {"seed", 3}};
    if (j.contains("draft_model")) j["draft_model"] = {{"type", "counted"}, {"vocab_size", j["model"]["vocab_size"]}, {"seed", 4}};
    if (j.contains("beam")) j["beam"]["max_new_tokens"] = 4;
    g_models_built = 0;
    Sample s = sample_parse(j, std::string(TRIESCOPE_SOURCE_DIR "/samples/") + name);
    std::ostringstream os;
    run_sample(s, nullptr, os);
    CHECK(g_models_built == (j.contains("draft_model") ? 2 : 1));
  }
}

namespace {
#ifdef TRIESCOPE_TOY_DEVICE_VERIFIER
// The records without what may differ between two runs of one decode: the
// backend's name and seams, and the seconds.
std::vector<json> decode_only(std::vector<json> records) {
  for (json& r : records) {
    if (r["kind"] == "header") {
      r.erase("backend");
      r.erase("seams");
    }
    if (r["kind"] == "summary") r.erase("seconds");
  }
  return records;
}
#endif

std::vector<json> with_verify_kind(std::vector<json> records, const std::string& kind) {
  for (json& r : records) {
    if (r["kind"] == "header") r["verify_kind"] = kind;
    if (r["kind"] == "step" && r.contains("verify")) r["verify"]["kind"] = kind;
  }
  return records;
}
}  // namespace

TEST_CASE("registry: a toy drafting algorithm with its own verify kind and device verifier runs through the CLI and the analysis",
          "[registry][cli][verify]") {
  cli::register_backends();
  REQUIRE(algorithm_find("toy_guess"));
  const VerifyKindSpec* kind = verify_kind_find(toy::kToyGuessKind);
  REQUIRE(kind);
  CHECK(kind->verifier == std::type_index(typeid(toy::ToyGuessVerifier)));
  const fs::path d = work_dir("toy_guess_cli");
  write(d / "toy.json", toy_guess_sample());
  const std::string a = (d / "a.jsonl").string(), b = (d / "b.jsonl").string();
  REQUIRE(run_cli({"run", (d / "toy.json").string(), "--out", a, "--quiet"}) == 0);
  REQUIRE(run_cli({"run", (d / "toy.json").string(), "--out", b, "--quiet"}) == 0);
  const std::vector<json> records = trace_read(a);
  testing::check_trace_properties(records, *algorithm_find("toy_guess"), 5, records.back()["metrics"]);
  CHECK(records.front()["verify_kind"] == toy::kToyGuessKind);
  CHECK(run_cli({"diff", a, b}) == 0);
  CHECK(run_cli({"check", a}) == 0);
  CHECK(run_cli({"inspect", a, "--step", "3"}) == 0);

  // Each verify step reads back through the kind's spec, as recorded.
  TraceReplay replay(records, a);
  int32_t accepted = 0, tokens = 0;
  for (const json& r : records) {
    if (r["kind"] != "step" || !r.contains("verify")) continue;
    const int32_t step = r["step"];
    CAPTURE(step);
    const VerifyInfo vi = verify_info(replay.at(step), replay);
    CHECK(vi.error.empty());
    CHECK(vi.kind == toy::kToyGuessKind);
    REQUIRE(vi.layers.size() == 1);
    REQUIRE(vi.layers[0].chips.size() == 1);
    const bool ok = r["verify"]["accepted"];
    CHECK(vi.layers[0].chips[0].node == r["verify"]["guess_node"].get<int32_t>());
    CHECK(vi.layers[0].chips[0].decision == (ok ? Decision::accepted : Decision::rejected));
    CHECK(vi.steps == (ok ? 2 : 1));
    const std::vector<VerifyRow> rows = kind->rows(vi, replay.at(step));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].head2 == (ok ? "accepted" : "rejected"));
    accepted += ok;
    tokens += vi.steps;
  }
  // The repetitive model accepts some guesses and rejects others, so both paths ran.
  CHECK(accepted > 0);
  CHECK(accepted < 24);
  const AcceptanceSeries series = acceptance_series(replay);
  REQUIRE(series.layers.size() == 1);
  CHECK(series.layers[0].tested == 24);
  CHECK(series.layers[0].accepted == accepted);
  CHECK(series.per_step.size() == 24);
  int32_t per_step_sum = 0;
  for (const auto& [step, n] : series.per_step) per_step_sum += n;
  CHECK(per_step_sum == tokens);
  CHECK(static_cast<int32_t>(records.back()["outputs"][0]["tokens"].size()) == tokens);

#ifdef TRIESCOPE_TOY_DEVICE_VERIFIER
  // The cuda-emu backend installs the toy's device verifier by iterating the
  // registered ones; its kernel decides every guess, and the decode is the CPU's.
  const int64_t calls = toy::toy_device_verifier_calls();
  const std::string c = (d / "emu.jsonl").string();
  REQUIRE(run_cli({"run", (d / "toy.json").string(), "--backend", "cuda-emu", "--out", c, "--quiet"}) == 0);
  CHECK(toy::toy_device_verifier_calls() - calls == 24);
  const std::vector<json> emu = trace_read(c);
  CHECK(emu.front()["backend"] == "cuda-emulated");
  CHECK(emu.front()["seams"].value("verify." + emu.front()["verify_kind"].get<std::string>(), std::string()) == "device");
  CHECK(decode_only(emu) == decode_only(records));
  CHECK(run_cli({"check", c}) == 0);
#endif
}

TEST_CASE("registry: an unregistered verify kind is a named error, never read as another kind", "[registry][verify]") {
  Sample s = sample_parse(toy_guess_sample(), TRIESCOPE_SOURCE_DIR "/samples/toy_guess.json");
  MemoryTraceSink sink;
  std::ostringstream os;
  run_sample(s, &sink, os);
  for (const std::string& bad : {std::string("no_such_kind"), std::string(kVerifySpeculativeChain) + "_v9"}) {
    CAPTURE(bad);
    TraceReplay replay(with_verify_kind(sink.records, bad), "bad.jsonl");
    const VerifyInfo vi = verify_info(replay.at(1), replay);
    CHECK(vi.empty());
    CHECK_THAT(vi.error, Catch::Contains("step 1: verify.kind: unknown verification kind \"" + bad + "\"") && Catch::Contains(toy::kToyGuessKind));
    CHECK(acceptance_series(replay).per_step.empty());
    CHECK_THROWS_WITH(verify_kind_of_header(replay.header(), "bad.jsonl"),
                      Catch::Contains("bad.jsonl: header verify_kind: unknown verification kind \"" + bad + "\""));
  }
  // A draft step of a trace whose header names an unknown kind (the old
  // reader drew it as a speculative chain).
  std::vector<json> dsbd;
  {
    Sample d = sample_load(TRIESCOPE_SOURCE_DIR "/samples/dsbd_figure3.json");
    MemoryTraceSink ds;
    run_sample(d, &ds, os);
    dsbd = with_verify_kind(ds.records, "dsbd_layers_v2");
  }
  TraceReplay replay(dsbd, "dsbd.jsonl");
  int32_t drafts = 0;
  for (int32_t step : replay.steps()) {
    const StepView v = replay.at(step);
    if (v.phase != "draft") continue;
    ++drafts;
    const VerifyInfo vi = verify_info(v, replay);
    CHECK(vi.empty());
    CHECK_THAT(vi.error, Catch::Contains("header.verify_kind: unknown verification kind \"dsbd_layers_v2\""));
  }
  CHECK(drafts > 0);
  const fs::path d = work_dir("unknown_kind");
  {
    std::ofstream f(d / "bad.jsonl");
    for (const json& r : dsbd) f << r.dump() << "\n";
  }
  CHECK(run_cli({"check", (d / "bad.jsonl").string()}) != 0);
}

namespace {
struct NoLookahead final : LookaheadVerifier {
  LookaheadVerifyOutput verify(const Logits&, int32_t, const std::vector<int32_t>&, const std::vector<int32_t>&,
                               const std::vector<int32_t>&) override {
    return {};
  }
};
}  // namespace

TEST_CASE("registry: a verifier of another type than its kind accepts is a named error", "[registry][verify]") {
  VerifierSet set;
  set.put<LookaheadVerifier>(kVerifyDsbdLayers, std::make_shared<NoLookahead>());
  CHECK(set.find<LookaheadVerifier>(kVerifyDsbdLayers));
  CHECK_FALSE(set.find<DsbdLayerVerifier>(kVerifyLookahead));  // none installed: the CPU reference
  CHECK_THROWS_WITH(set.find<DsbdLayerVerifier>(kVerifyDsbdLayers),
                    Catch::Contains("verify kind \"dsbd_layers\" holds a triescope::LookaheadVerifier") &&
                        Catch::Contains("needs a triescope::DsbdLayerVerifier"));
  CHECK_THROWS_WITH(verifier_set_check(set), Catch::Contains("verify kind \"dsbd_layers\" accepts a triescope::DsbdLayerVerifier") &&
                                                 Catch::Contains("got a triescope::LookaheadVerifier"));
  VerifierSet unknown;
  unknown.put<LookaheadVerifier>("no_such_kind", std::make_shared<NoLookahead>());
  CHECK_THROWS_WITH(verifier_set_check(unknown), Catch::Contains("unknown verification kind \"no_such_kind\""));
  // The decoders look theirs up by kind: DSBD refuses the wrong type by name.
  Sample d = sample_load(TRIESCOPE_SOURCE_DIR "/samples/dsbd_figure3.json");
  d.options.verifiers = set;
  std::ostringstream os;
  CHECK_THROWS_WITH(run_sample(d, nullptr, os), Catch::Contains("dsbd_layers") && Catch::Contains("LookaheadVerifier"));
  // So does the toy drafting algorithm with its own kind.
  Sample t = sample_parse(toy_guess_sample(), TRIESCOPE_SOURCE_DIR "/samples/toy_guess.json");
  t.options.verifiers.put<LookaheadVerifier>(toy::kToyGuessKind, std::make_shared<NoLookahead>());
  CHECK_THROWS_WITH(run_sample(t, nullptr, os), Catch::Contains("verify kind \"toy_guess\" holds a triescope::LookaheadVerifier") &&
                                                   Catch::Contains("triescope::toy::ToyGuessVerifier"));
}
