// The external-engine writer, the mask checker over its traces, and the
// scores replay model (core/trace/external_trace.h, core/analysis/mask_check.h,
// core/model/scores_replay_model.h). The Python tests (label python) drive
// the same code through the bindings.
#include <catch2/catch.hpp>

#include <filesystem>
#include <limits>
#include <unistd.h>

#include "core/analysis/mask_check.h"
#include "core/common/error.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/scores_replay_model.h"
#include "core/model/synthetic_model.h"
#include "core/trace/external_trace.h"
#include "core/trace/trace_replay.h"

using namespace triescope;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("triescope-external-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

BitMask rows(const std::vector<std::vector<int>>& bits) {
  BitMask m(static_cast<int32_t>(bits.size()), static_cast<int32_t>(bits.front().size()));
  for (size_t r = 0; r < bits.size(); ++r)
    for (size_t c = 0; c < bits[r].size(); ++c)
      if (bits[r][c]) m.set(static_cast<int32_t>(r), static_cast<int32_t>(c));
  return m;
}

ExternalStep pass(std::vector<ExternalNode> added, std::vector<int32_t> queries, BitMask mask, std::vector<int32_t> positions) {
  ExternalStep s;
  s.added = std::move(added);
  s.has_forward = true;
  s.queries = std::move(queries);
  s.mask = std::move(mask);
  s.positions = std::move(positions);
  return s;
}

// A prompt chain 0-1 (slots 0, 1), then children 2, 3 of node 1 with `second` as node 3's row.
MaskCheckReport write_and_check(const fs::path& path, std::vector<int> second, int32_t second_pos) {
  ExternalTraceWriter w(path.string(), "unit", {"a", "b", "c", "d"}, json::object());
  CHECK(w.step(pass({{kNoNode, 0, 0}, {0, 1, 1}}, {0, 1}, rows({{1, 0}, {1, 1}}), {0, 1})) == std::vector<int32_t>{0, 1});
  CHECK(w.step(pass({{1, 2, 2}, {1, 3, 3}}, {2, 3}, rows({{1, 1, 1, 0}, second}), {2, second_pos})) == std::vector<int32_t>{2, 3});
  w.close({{2}});
  return mask_check_trace(TraceReplay(trace_read(path.string()), path.string()));
}

}  // namespace

TEST_CASE("external trace: a correct tree mask passes check, each planted mistake is named", "[external][check]") {
  const fs::path p = scratch("t.jsonl");
  const MaskCheckReport ok = write_and_check(p, {1, 1, 0, 1}, 2);
  CHECK(ok.ok());
  CHECK(ok.layout == "tree");
  CHECK(ok.passes == 2);
  CHECK(ok.rows == 4);
  const TraceReplay t(trace_read(p.string()), p.string());
  CHECK(t.header()["algorithm"] == kExternalAlgorithm);
  CHECK(t.header()["config"]["engine"] == "unit");
  CHECK(t.at(1).nodes.size() == 4);

  struct Case {
    std::vector<int> row;
    int32_t pos;
    int32_t slot;
    MaskFault fault;
    int64_t expected, found;
  };
  for (const Case& c : {Case{{1, 1, 1, 1}, 2, 2, MaskFault::sees_sibling, 0, 1}, Case{{1, 1, 0, 0}, 2, 3, MaskFault::missing_self, 1, 0},
                        Case{{1, 0, 0, 1}, 2, 1, MaskFault::missing_ancestor, 1, 0},
                        Case{{1, 1, 0, 1}, 3, kNoSlot, MaskFault::wrong_position, 2, 3}}) {
    const MaskCheckReport r = write_and_check(p, c.row, c.pos);
    REQUIRE(r.violation_count == 1);
    const MaskViolation& v = r.violations.front();
    CHECK(v.step == 1);
    CHECK(v.row == 1);
    CHECK(v.query == 3);
    CHECK(v.slot == c.slot);
    CHECK(v.fault == c.fault);
    CHECK(v.expected == c.expected);
    CHECK(v.found == c.found);
  }
}

TEST_CASE("external trace: invalid steps are refused by name and record nothing", "[external]") {
  const fs::path p = scratch("bad.jsonl");
  {
    ExternalTraceWriter w(p.string(), "unit", {}, json::object());
    w.step(pass({{kNoNode, 0, 0}, {0, 1, 1}}, {0, 1}, rows({{1, 0}, {1, 1}}), {0, 1}));
    CHECK_THROWS_WITH(w.step(pass({{7, 2, 2}}, {2}, rows({{1, 1, 1}}), {2})), Catch::Contains("added[0].parent: node 7 does not exist"));
    CHECK_THROWS_WITH(w.step(pass({{1, 2, 1}}, {2}, rows({{1, 1, 1}}), {2})), Catch::Contains("added[0].slot: slot 1 is still held by node 1 (live)"));
    CHECK_THROWS_WITH(w.step(pass({{1, 2, 2}}, {2}, rows({{1, 1, 1}, {1, 1, 1}}), {2})), Catch::Contains("mask: 2 rows for 1 queries"));
    CHECK_THROWS_WITH(w.step(pass({{1, 2, 2}}, {2}, rows({{1, 1, 1}}), {2, 3})), Catch::Contains("positions: 2 entries for 1 queries"));
    ExternalStep gc;
    gc.has_gc = true;
    gc.gc_moves = {{0, 0}};
    CHECK_THROWS_WITH(w.step(gc), Catch::Contains("gc: drops slot 1 of live node 1"));
    CHECK(w.steps() == 1);
    CHECK(w.tree().size() == 2);
    ExternalStep prune;
    prune.status = {{1, "pruned"}};
    w.step(prune);
    w.step(gc);  // node 1 is pruned now: its slot may go
    CHECK(w.tree().node(1).slot == kNoSlot);
    CHECK(w.step(pass({{0, 3, 1}}, {2}, rows({{1, 1}}), {1})) == std::vector<int32_t>{2});  // slot 1 is free again
    // Destroyed unclosed: nothing at the path.
  }
  CHECK_FALSE(fs::exists(p));
}

TEST_CASE("scores replay: the batch run's rows answer the trie run by context", "[external][replay]") {
  // Record a synthetic model's logits as an engine would (one row per beam copy and
  // step), replay them through batch then trie beam search: same hypotheses as the model.
  SyntheticConfig sc;
  sc.vocab_size = 40;
  sc.seed = 5;
  SyntheticModel model(sc);
  BeamConfig cfg;
  cfg.num_beams = 3;
  cfg.max_new_tokens = 6;
  cfg.gc_interval = 2;
  const std::vector<int32_t> prompt = {1, 2, 3};
  const DecodeResult direct = trie_beam_search(model, prompt, cfg);

  struct Recorder final : Model {  // the synthetic model, its last-position rows kept per call
    Model& m;
    std::vector<std::vector<float>> steps;
    explicit Recorder(Model& inner) : m(inner) {}
    int32_t vocab_size() const override { return m.vocab_size(); }
    void forward(const StepInput& in, Logits& out) override {
      m.forward(in, out);
      const int32_t deepest = *std::max_element(in.positions.begin(), in.positions.end());
      std::vector<float> rowsv;
      for (int32_t r = 0; r < out.rows; ++r)
        if (in.positions[static_cast<size_t>(r)] == deepest) rowsv.insert(rowsv.end(), out.row(r), out.row(r) + out.vocab);
      rowsv.resize(static_cast<size_t>(3 * out.vocab), 0.0f);
      steps.push_back(rowsv);
    }
    void compact(const CompactionPlan& p) override { m.compact(p); }
    void reset() override { m.reset(); steps.clear(); }
    nlohmann::json describe() const override { return m.describe(); }
    KvShape kv_shape() const override { return m.kv_shape(); }
  } rec(model);
  const DecodeResult batch = batch_beam_search(rec, prompt, cfg);
  REQUIRE(batch.hypotheses.size() == direct.hypotheses.size());

  ScoresReplayModel replay(40, 3, rec.steps, prompt, KvShape{}, {{"type", "test"}});
  replay.set_lookup(ScoresReplayModel::Lookup::by_row);
  const DecodeResult rb = batch_beam_search(replay, prompt, cfg);
  CHECK(replay.calls() == replay.steps());
  replay.set_lookup(ScoresReplayModel::Lookup::by_context);
  const DecodeResult rt = trie_beam_search(replay, prompt, cfg);
  for (size_t i = 0; i < direct.hypotheses.size(); ++i) {
    CHECK(rb.hypotheses[i].tokens == batch.hypotheses[i].tokens);
    CHECK(rt.hypotheses[i].tokens == direct.hypotheses[i].tokens);
    CHECK(rt.hypotheses[i].score == Approx(direct.hypotheses[i].score).epsilon(1e-9));
  }
  // A context the engine never computed is named.
  BeamConfig wider = cfg;
  wider.num_beams = 4;
  CHECK_THROWS_WITH(trie_beam_search(replay, prompt, wider), Catch::Contains("never computed the continuation"));
}
