#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/common/error.h"
#include "core/decode/trie_beam_search.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_replay.h"

using namespace triescope;
namespace fs = std::filesystem;

namespace {
std::vector<json> decode_trace(uint64_t seed, int32_t gc, int32_t keyframes, TokenTree* tree_out = nullptr) {
  SyntheticConfig mc;
  mc.vocab_size = 40;
  mc.seed = seed;
  SyntheticModel model(mc);
  BeamConfig cfg;
  cfg.num_beams = 4;
  cfg.max_new_tokens = 15;
  cfg.gc_interval = gc;
  MemoryTraceSink sink;
  DecodeOptions opt;
  opt.keyframe_interval = keyframes;
  trie_beam_search(model, {5, 6, 7}, cfg, &sink, opt);
  (void)tree_out;
  return sink.records;
}

std::string dump_lines(const std::vector<json>& recs) {
  std::string s;
  for (auto& r : recs) s += r.dump() + "\n";
  return s;
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("triescope-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("trace: file round trip is lossless", "[trace]") {
  auto recs = decode_trace(1, 3, 4);
  const fs::path p = temp_dir() / "rt.jsonl";
  {
    TraceFileWriter w(p.string());
    for (auto& r : recs) w.record(r);
    w.commit();
  }
  auto back = trace_read(p.string());
  REQUIRE(back.size() == recs.size());
  CHECK(!trace_diff(recs, back, {0.0}));
  CHECK(back.front()["schema"] == "triescope.trace");
  CHECK(back.front()["version"] == kTraceVersion);
}

TEST_CASE("trace: an uncommitted writer leaves no file behind", "[trace]") {
  const fs::path p = temp_dir() / "partial.jsonl";
  {
    TraceFileWriter w(p.string());
    w.record({{"kind", "header"}});
  }
  CHECK_FALSE(fs::exists(p));
  for (auto& e : fs::directory_iterator(p.parent_path())) CHECK(e.path().string().find("partial.jsonl.tmp") == std::string::npos);
}

TEST_CASE("trace replay: the state at every step matches the decode, with or without keyframes", "[trace]") {
  const int32_t keyframes = GENERATE(0, 1, 5);
  const int32_t gc = GENERATE(0, 2);
  CAPTURE(keyframes, gc);
  auto recs = decode_trace(3, gc, keyframes);
  TraceReplay with(recs, "mem");
  auto plain = decode_trace(3, gc, 0);
  TraceReplay without(plain, "mem");
  REQUIRE(with.steps() == without.steps());
  for (int32_t s : with.steps()) {
    CAPTURE(s);
    const StepView a = with.at(s), b = without.at(s);
    REQUIRE(a.nodes.size() == b.nodes.size());
    for (size_t i = 0; i < a.nodes.size(); ++i) {
      CHECK(a.nodes[i].slot == b.nodes[i].slot);
      CHECK(a.nodes[i].status == b.nodes[i].status);
    }
    CHECK(a.added == b.added);
    // The recorded mask of each forward is exactly the ancestor mask of the replayed tree.
    if (a.forward) {
      TokenTree t;
      for (auto& n : a.nodes) {
        if (n.parent == kNoNode) t.add_root(n.token, n.depth);
        else t.add_child(n.parent, n.token, n.logprob);
        t.node(n.id).slot = n.slot;
      }
      CHECK(ancestor_mask_build(t, a.forward->queries, a.forward->mask.cols) == a.forward->mask);
      CHECK(position_ids(t, a.forward->queries) == a.forward->positions);
    }
  }
}

TEST_CASE("trace diff: names the first planted divergence exactly", "[trace]") {
  auto a = decode_trace(5, 2, 4);
  SECTION("identical traces are equivalent") { CHECK(!trace_diff(a, a)); }
  SECTION("a flipped mask bit") {
    auto b = a;
    size_t idx = 0;
    for (size_t i = 0; i < b.size(); ++i)
      if (b[i]["kind"] == "step" && b[i]["step"] == 3) idx = i;
    REQUIRE(idx > 0);
    BitMask m = trace_mask_parse(b[idx]["forward"]["mask"], "test");
    m.flip(1, 2);
    b[idx]["forward"]["mask"] = trace_mask(m);
    auto d = trace_diff(a, b);
    REQUIRE(d);
    CHECK(d->step == 3);
    CHECK(d->kind == "step");
    CHECK(d->field == "forward.mask.rows[1]");
    CHECK(d->path == std::vector<TracePathStep>{{"forward", -1}, {"mask", -1}, {"rows", -1}, {"", 1}});
    CHECK(d->index == 2);
    CHECK(d->describe().find("step 3") != std::string::npos);
  }
  SECTION("a score beyond the tolerance, and within it") {
    auto b = a;
    size_t idx = 0;
    while (!(b[idx]["kind"] == "step" && b[idx]["phase"] == "expand")) ++idx;
    auto& chosen = b[idx]["chosen"][0]["score"];
    const double x = chosen.get<double>();
    chosen = x * (1 + 1e-9);
    CHECK(!trace_diff(a, b, {1e-6}));
    chosen = x + 0.01;
    auto d = trace_diff(a, b, {1e-6});
    REQUIRE(d);
    CHECK(d->field == "chosen[0].score");
    CHECK(d->path == std::vector<TracePathStep>{{"chosen", -1}, {"", 0}, {"score", -1}});
  }
  SECTION("provenance is not compared: backend, wall time, the model's source, its token labels, file names") {
    auto b = a;
    b[0]["backend"] = "cuda";
    b.back()["seconds"] = 123.0;
    b[0]["model"] = {{"type", "hf_generate_scores"}, {"hf_model_type", "llama"}, {"source", {{"path", "/elsewhere"}}}};
    b[0]["vocab"] = {"x", "y"};
    b[0]["config"]["constraint"] = {{"file", "a/set.npy"}, {"set", {{"origin", "/tmp/set.npy"}}}, {"trie_path", "t"}};
    auto c = a;
    c[0]["config"]["constraint"] = {{"file", "b/set.npy"}, {"set", {{"origin", "/var/set.npy"}}}, {"trie_path", "u"}};
    CHECK(!trace_diff(c, b));
  }
  SECTION("the decode's config is compared: algorithm, config, a content hash") {
    for (const char* field : {"algorithm", "config"}) {
      CAPTURE(field);
      auto b = a;
      b[0][field] = "other";
      auto d = trace_diff(a, b);
      REQUIRE(d);
      CHECK(d->kind == "header");
      CHECK(d->field == field);
    }
    auto b = a, c = a;
    b[0]["config"]["constraint"] = {{"file", "set.npy"}, {"sha256", "ab12"}};
    c[0]["config"]["constraint"] = {{"file", "set.npy"}, {"sha256", "ab13"}};
    auto d = trace_diff(b, c);
    REQUIRE(d);
    CHECK(d->field == "config.constraint.sha256");
    // ... and so is a step's field named like a file (a constraint's mask path).
    CHECK(!trace_field_is_provenance("step", false, "path"));
    CHECK(trace_field_is_provenance("header", false, "path"));
    CHECK(!trace_field_is_provenance("header", false, "model"));
  }
  SECTION("a missing record") {
    auto b = a;
    b.pop_back();
    auto d = trace_diff(a, b);
    REQUIRE(d);
    CHECK(d->field == "<records>");
  }
}

TEST_CASE("trace reader: names the file, line and field of bad input", "[trace]") {
  const std::string good = dump_lines(decode_trace(1, 0, 0));
  auto msg = [](const std::string& text) {
    try {
      trace_parse(text, "t.jsonl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(msg(""), Catch::Contains("t.jsonl: empty trace"));
  CHECK_THAT(msg("{not json\n"), Catch::Contains("t.jsonl:1:3: malformed JSON"));
  CHECK_THAT(msg("{\"kind\":\"header\",\"schema\":\"other\",\"version\":1}\n"), Catch::Contains("field schema"));
  CHECK_THAT(msg("{\"kind\":\"header\",\"schema\":\"triescope.trace\",\"version\":3}\n"),
             Catch::Contains("field version is 3"));
  CHECK_THAT(msg("{\"kind\":\"header\",\"schema\":\"triescope.trace\",\"version\":0}\n"),
             Catch::Contains("field version is 0"));
  CHECK_THAT(msg("{\"kind\":\"step\",\"step\":0}\n"), Catch::Contains("first record must be the header"));
  std::string bad_kind = good.substr(0, good.find('\n') + 1) + "{\"kind\":\"bogus\",\"step\":1}\n";
  CHECK_THAT(msg(bad_kind), Catch::Contains("t.jsonl:2: unknown record kind"));
  std::string no_step = good.substr(0, good.find('\n') + 1) + "{\"kind\":\"step\"}\n";
  CHECK_THAT(msg(no_step), Catch::Contains("t.jsonl:2: field step"));
  CHECK(msg(good) == "no error");
}

TEST_CASE("trace replay: a malformed tree gets a named error, never a crash", "[trace]") {
  auto base = decode_trace(2, 0, 0);
  auto error_at = [](std::vector<json> recs, int32_t step) {
    try {
      TraceReplay(std::move(recs), "t.jsonl").at(step);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE(error_at(base, 3) == "no error");
  SECTION("a node that is never defined: ids are dense, so the next one skips it") {
    auto recs = base;
    recs[1]["added"].erase(1);  // drop prompt node 1 from the prefill
    CHECK_THAT(error_at(recs, 3), Catch::Contains("t.jsonl:2: added[1]: field id = 2 skips ids: node ids are dense, the next new id is 1"));
  }
  SECTION("a parent that comes later") {
    auto recs = base;
    recs[1]["added"][0]["parent"] = 2;
    CHECK_THAT(error_at(recs, 1), Catch::Contains("node 0 field parent = 2"));
  }
  SECTION("a depth that is not the parent's + 1") {
    auto recs = base;
    recs[1]["added"][2]["depth"] = 7;
    CHECK_THAT(error_at(recs, 1), Catch::Contains("node 2 field depth = 7"));
  }
  SECTION("two nodes in one slot") {
    auto recs = base;
    recs[1]["added"][2]["slot"] = 1;
    CHECK_THAT(error_at(recs, 1), Catch::Contains("slot 1 held by nodes 1 and 2"));
  }
}
