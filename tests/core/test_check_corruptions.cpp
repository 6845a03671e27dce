// `triescope check` on corrupted copies of real traces (sample_traces.h: every
// algorithm, batch_beam_search included): twelve kinds of corruption, each
// planted into every trace it applies to, each required to fail the check
// with the fault it is, at the row and column it was planted (mask, position
// and slot faults), or with a named error (nodes and step records).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

#include "core/analysis/mask_check.h"
#include "core/common/error.h"
#include "core/decode/algorithm.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"
#include "sample_traces.h"

using namespace triescope;

namespace {

// What `triescope check` does with a trace: read it, then check every pass.
struct Checked {
  std::string error;                    // the named error, "" when the trace read
  std::vector<MaskViolation> violations;  // all of them (limit large)
  std::vector<std::string> summary;       // the summary's counters against the records
  bool ok() const { return error.empty() && violations.empty() && summary.empty(); }
};

Checked check(const std::vector<json>& records) {
  Checked c;
  try {
    const TraceReplay t(records, "corrupt.jsonl");
    MaskCheckReport rep = mask_check_trace(t, 100000);
    c.violations = std::move(rep.violations);
    c.summary = std::move(rep.summary_problems);
  } catch (const Error& e) {
    c.error = e.what();
  }
  return c;
}

// What a planted corruption must produce: a named error containing `error`,
// or exactly one violation of `fault` at (step, row, col).
struct Expect {
  std::string error;
  int32_t step = -1, row = -1, col = kNoSlot;
  std::set<MaskFault> faults;
};

bool is_step(const json& r) { return r.value("kind", "") == "step"; }
bool copies(const std::vector<json>& recs) { return recs.front().value("algorithm", "") == "batch_beam_search"; }
int32_t last_step(const std::vector<json>& recs) {
  int32_t s = -1;
  for (const json& r : recs)
    if (is_step(r)) s = std::max(s, r["step"].get<int32_t>());
  return s;
}
std::set<int32_t> keyframe_steps(const std::vector<json>& recs) {
  std::set<int32_t> k;
  for (const json& r : recs)
    if (r.value("kind", "") == "keyframe") k.insert(r["step"].get<int32_t>());
  return k;
}
size_t step_index(const std::vector<json>& recs, int32_t step) {
  for (size_t i = 0; i < recs.size(); ++i)
    if (is_step(recs[i]) && recs[i]["step"] == step) return i;
  FAIL("no step record of step " << step);
  return 0;
}

// The step record whose forward pass the mask kinds corrupt: among the
// records with a forward of >= 2 rows, the middle one (the prefill when no
// other has one).
size_t forward_record(const std::vector<json>& recs) {
  std::vector<size_t> with;
  for (size_t i = 0; i < recs.size(); ++i)
    if (is_step(recs[i]) && recs[i].contains("forward") && recs[i]["forward"]["positions"].size() >= 2) with.push_back(i);
  REQUIRE(!with.empty());
  std::vector<size_t> later;
  for (size_t i : with)
    if (recs[i]["step"] != 0) later.push_back(i);
  return later.empty() ? with.front() : later[later.size() / 2];
}

BitMask mask_of(const json& rec) { return trace_mask_parse(rec["forward"]["mask"], "plant"); }
void set_mask(json& rec, const BitMask& m) { rec["forward"]["mask"] = trace_mask(m); }
int32_t slot_of_row(const json& rec, int32_t r) { return rec["forward"]["slots"][static_cast<size_t>(r)].get<int32_t>(); }

// A planted corruption: false when the trace has nothing it applies to.
using Plant = bool (*)(std::vector<json>& recs, Expect& e);

bool self_bit_cleared(std::vector<json>& recs, Expect& e) {
  json& rec = recs[forward_record(recs)];
  BitMask m = mask_of(rec);
  e = {"", rec["step"].get<int32_t>(), m.rows - 1, slot_of_row(rec, m.rows - 1), {MaskFault::missing_self}};
  m.flip(e.row, e.col);
  set_mask(rec, m);
  return true;
}

bool ancestor_bit_cleared(std::vector<json>& recs, Expect& e) {
  json& rec = recs[forward_record(recs)];
  BitMask m = mask_of(rec);
  for (int32_t r = m.rows - 1; r >= 0; --r)
    for (int32_t c = 0; c < m.cols; ++c)
      if (m.test(r, c) && c != slot_of_row(rec, r)) {
        e = {"", rec["step"].get<int32_t>(), r, c, {MaskFault::missing_ancestor}};
        m.flip(r, c);
        set_mask(rec, m);
        return true;
      }
  return false;
}

// A column another row of the pass reads (so a node or token holds it) set
// in a row that must not read it.
bool stray_bit_set(std::vector<json>& recs, Expect& e) {
  json& rec = recs[forward_record(recs)];
  BitMask m = mask_of(rec);
  for (int32_t r = 0; r < m.rows; ++r)
    for (int32_t c = 0; c < m.cols; ++c)
      for (int32_t o = 0; o < m.rows; ++o)
        if (!m.test(r, c) && m.test(o, c)) {
          e = {"", rec["step"].get<int32_t>(), r, c, {MaskFault::sees_sibling, MaskFault::sees_descendant, MaskFault::sees_other_branch}};
          m.flip(r, c);
          set_mask(rec, m);
          return true;
        }
  return false;
}

// A slot nothing holds: past every node's slot in a tree layout (the mask
// widened to reach it), the copy's next, not yet written slot in the batch one.
bool free_slot_bit_set(std::vector<json>& recs, Expect& e) {
  const size_t idx = forward_record(recs);
  json& rec = recs[idx];
  BitMask m = mask_of(rec);
  const int32_t r = m.rows - 1;
  int32_t col = slot_of_row(rec, r) + 1;
  if (!copies(recs)) {
    const StepView v = TraceReplay(recs, "clean").at(rec["step"].get<int32_t>());
    col = std::max<int32_t>(m.cols, static_cast<int32_t>(v.slot_to_node.size()));
    BitMask wide(m.rows, col + 1);
    for (int32_t i = 0; i < m.rows; ++i)
      for (int32_t c = 0; c < m.cols; ++c)
        if (m.test(i, c)) wide.set(i, c);
    m = wide;
  }
  if (col >= m.cols || m.test(r, col)) return false;
  e = {"", rec["step"].get<int32_t>(), r, col, {MaskFault::sees_free_slot}};
  m.set(r, col);
  set_mask(rec, m);
  return true;
}

bool position_off_by_one(std::vector<json>& recs, Expect& e) {
  json& rec = recs[forward_record(recs)];
  json& pos = rec["forward"]["positions"];
  e = {"", rec["step"].get<int32_t>(), static_cast<int32_t>(pos.size()) - 1, kNoSlot, {MaskFault::wrong_position}};
  pos.back() = pos.back().get<int32_t>() + 1;
  return true;
}

// The row says it wrote another row's slot; its mask and position are right.
bool slot_of_another_row(std::vector<json>& recs, Expect& e) {
  json& rec = recs[forward_record(recs)];
  json& slots = rec["forward"]["slots"];
  const int32_t r = static_cast<int32_t>(slots.size()) - 1;
  e = {"", rec["step"].get<int32_t>(), r, slots[0].get<int32_t>(), {MaskFault::wrong_slot}};
  slots.back() = slots[0];
  return true;
}

// The step record (after the prefill) that adds nodes, the middle one.
size_t adding_record(const std::vector<json>& recs) {
  std::vector<size_t> with;
  for (size_t i = 0; i < recs.size(); ++i)
    if (is_step(recs[i]) && recs[i]["step"] != 0 && recs[i].contains("added") && !recs[i]["added"].empty()) with.push_back(i);
  return with.empty() ? 0 : with[with.size() / 2];
}

bool node_listed_twice(std::vector<json>& recs, Expect& e) {
  const size_t i = adding_record(recs);
  if (i == 0) return false;
  json& added = recs[i]["added"];
  added.push_back(added.back());
  e.error = "defines node " + std::to_string(added.back()["id"].get<int32_t>()) + " a second time";
  return true;
}

// The second listing moves the node under another parent (depth fixed to
// match): what put_node applied silently.
bool node_listed_twice_moved(std::vector<json>& recs, Expect& e) {
  const size_t i = adding_record(recs);
  if (i == 0) return false;
  json& added = recs[i]["added"];
  json moved = added.back();
  const StepView before = TraceReplay(recs, "clean").at(recs[i]["step"].get<int32_t>() - 1);
  for (const TreeNode& p : before.nodes)
    if (p.id != moved["parent"].get<int32_t>()) {
      moved["parent"] = p.id;
      moved["depth"] = p.depth + 1;
      added.push_back(moved);
      e.error = "defines node " + std::to_string(moved["id"].get<int32_t>()) + " a second time";
      return true;
    }
  return false;
}

// A node of the prefill listed again by a later step.
bool node_defined_again_later(std::vector<json>& recs, Expect& e) {
  const size_t i = adding_record(recs);
  const size_t pre = step_index(recs, 0);
  if (i == 0 || !recs[pre].contains("added") || recs[pre]["added"].empty()) return false;
  const json node = recs[pre]["added"].back();
  recs[i]["added"].push_back(node);
  e.error = "defines node " + std::to_string(node["id"].get<int32_t>()) + " a second time";
  return true;
}

bool drop_step(std::vector<json>& recs, Expect& e, bool at_keyframe) {
  const std::set<int32_t> kf = keyframe_steps(recs);
  const int32_t last = last_step(recs);
  // With a keyframe: any such step (the last one too: it always has one);
  // without: any step before the last (the prefill too: it never has one).
  std::vector<int32_t> candidates;
  for (int32_t s = 0; s <= last; ++s)
    if (kf.count(s) == static_cast<size_t>(at_keyframe) && (at_keyframe || s < last)) candidates.push_back(s);
  if (candidates.empty()) return false;
  const int32_t s = candidates[candidates.size() / 2];
  recs.erase(recs.begin() + static_cast<std::ptrdiff_t>(step_index(recs, s)));
  e.error = "the step record of step " + std::to_string(s) + " is missing";
  return true;
}
bool step_dropped_at_keyframe(std::vector<json>& recs, Expect& e) { return drop_step(recs, e, true); }
bool step_dropped(std::vector<json>& recs, Expect& e) { return drop_step(recs, e, false); }

bool step_written_twice(std::vector<json>& recs, Expect& e) {
  const int32_t s = last_step(recs) / 2;
  const size_t i = step_index(recs, s);
  recs.insert(recs.begin() + static_cast<std::ptrdiff_t>(i) + 1, recs[i]);
  e.error = "a second step record for step " + std::to_string(s);
  return true;
}

struct Kind {
  const char* name;
  Plant plant;
  bool tree_only;  // needs nodes or keyframes (the batch layout has neither)
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"mask: own slot's bit cleared", self_bit_cleared, false},
      {"mask: an ancestor's bit cleared", ancestor_bit_cleared, false},
      {"mask: a non-ancestor's slot set", stray_bit_set, false},
      {"mask: a slot nothing holds set", free_slot_bit_set, false},
      {"position id off by one", position_off_by_one, false},
      {"slot written is another row's", slot_of_another_row, false},
      {"node listed twice in a step's added", node_listed_twice, true},
      {"node listed twice, the copy under another parent", node_listed_twice_moved, true},
      {"prefill node defined again by a later step", node_defined_again_later, true},
      {"step record dropped at a keyframe step", step_dropped_at_keyframe, true},
      {"step record dropped", step_dropped, false},
      {"step record written twice", step_written_twice, false},
  };
  return k;
}

// "" when `c` is what `e` asks for, else what is wrong.
std::string mismatch(const Checked& c, const Expect& e) {
  if (c.ok()) return "check passed it";
  if (!e.error.empty()) {
    if (c.error.find(e.error) != std::string::npos && c.error.find("corrupt.jsonl") != std::string::npos) return "";
    return "expected an error containing \"" + e.error + "\", got \"" + c.error + "\" and " + std::to_string(c.violations.size()) +
           " violations";
  }
  if (!c.error.empty()) return "expected a violation, got the error \"" + c.error + "\"";
  if (c.violations.size() != 1) {
    std::string all;
    for (const MaskViolation& v : c.violations) all += "\n  " + v.describe();
    return "expected exactly one violation, got " + std::to_string(c.violations.size()) + ":" + all;
  }
  const MaskViolation& v = c.violations.front();
  if (v.step != e.step || v.row != e.row || v.slot != e.col || e.faults.count(v.fault) == 0)
    return "expected step " + std::to_string(e.step) + ", row " + std::to_string(e.row) + ", slot " + std::to_string(e.col) +
           ", fault " + mask_fault_name(*e.faults.begin()) + "; got " + v.describe();
  return "";
}

}  // namespace

TEST_CASE("check: every planted corruption of every algorithm's trace fails, named as what it is", "[trace][check]") {
  std::map<std::string, std::set<std::string>> planted;  // kind -> algorithms
  std::set<std::string> algorithms_seen;
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    CAPTURE(t.name);
    const std::string algorithm = t.records.front().value("algorithm", "");
    algorithms_seen.insert(algorithm);
    const Checked clean = check(t.records);
    INFO(clean.error);
    REQUIRE(clean.ok());  // the corruption below is the only fault
    for (const Kind& k : kinds()) {
      CAPTURE(k.name);
      if (k.tree_only && copies(t.records)) continue;
      std::vector<json> recs = t.records;
      Expect e;
      // Every kind applies to every trace of its layout: a trace too short
      // for one is a gap in the suite, not a pass.
      REQUIRE(k.plant(recs, e));
      CHECK(mismatch(check(recs), e) == "");
      planted[k.name].insert(algorithm);
    }
  }
  // Every registered algorithm has a trace, so every kind met every algorithm.
  for (const AlgorithmSpec* a : algorithms()) {
    CAPTURE(a->name);
    CHECK(algorithms_seen.count(a->name) == 1);
  }
  for (const Kind& k : kinds()) {
    CAPTURE(k.name);
    CHECK(planted[k.name].size() == algorithms_seen.size() - (k.tree_only ? 1 : 0));
  }
}

TEST_CASE("check: the last step record dropped is named by the summary's last_step", "[trace][check]") {
  namespace fs = std::filesystem;
  const fs::path p = fs::temp_directory_path() / ("triescope-last-step-" + std::to_string(::getpid()) + ".jsonl");
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    CAPTURE(t.name);
    std::vector<json> recs = t.records;
    const int32_t last = last_step(recs);
    recs.erase(recs.begin() + static_cast<std::ptrdiff_t>(step_index(recs, last)));
    // A tree trace's final keyframe names it first, the batch one's summary.
    const std::string by_keyframe = "the step record of step " + std::to_string(last) + " is missing";
    const std::string by_summary =
        "metrics.last_step = " + std::to_string(last) + ", but the last step record is step " + std::to_string(last - 1);
    CHECK_THAT(check(recs).error, Catch::Contains("corrupt.jsonl") && (Catch::Contains(by_keyframe) || Catch::Contains(by_summary)));
    // The same from the file, streamed (TraceReplay::open): the summary is read through the index.
    {
      std::ofstream out(p);
      for (const json& r : recs) out << r.dump() << "\n";
    }
    std::string streamed = "none";
    try {
      mask_check_trace(TraceReplay::open(p.string()), 100000);
    } catch (const Error& e) {
      streamed = e.what();
    }
    CHECK_THAT(streamed, Catch::Contains(p.string()) && (Catch::Contains(by_keyframe) || Catch::Contains(by_summary)));
  }
  fs::remove(p);
}

TEST_CASE("check: the summary's counters are recounted from the records, a missing summary is named", "[trace][check]") {
  // Every algorithm's clean trace agrees with itself (the recount reads records as the recorder does).
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    CAPTURE(t.name);
    const Checked clean = check(t.records);
    CHECK(clean.summary.empty());
    const json metrics = t.records.back()["metrics"];
    for (const char* field : {"model_calls", "computed_tokens", "gc_runs", "peak_slots", "final_slots"}) {
      if (!metrics.contains(field)) continue;
      CAPTURE(field);
      std::vector<json> recs = t.records;
      recs.back()["metrics"][field] = metrics[field].get<int64_t>() + 1;
      const Checked c = check(recs);
      CHECK(c.error.empty());
      CHECK(c.violations.empty());
      REQUIRE(c.summary.size() == 1);
      CHECK_THAT(c.summary[0], Catch::Contains("corrupt.jsonl: summary metrics." + std::string(field) + " = " +
                                               std::to_string(metrics[field].get<int64_t>() + 1) + ", but the records give " +
                                               std::to_string(metrics[field].get<int64_t>())));
    }
    // Cut at a record boundary after the last step: replays fine, but no summary.
    std::vector<json> cut = t.records;
    cut.pop_back();
    const Checked c = check(cut);
    CHECK(c.error.empty());
    REQUIRE(c.summary.size() == 1);
    CHECK_THAT(c.summary[0], Catch::Contains("no summary record after step " + std::to_string(last_step(t.records))));
  }
  // A gc record dropped never passes: one that moved or freed what a later
  // record relies on fails the replay, one that freed nothing only gc_runs catches.
  // Each trace's first and last gc record and up to 4 spread between them
  // (every one of them took 94 s under ASan, most of CI's longest test).
  int dropped = 0, by_summary = 0;
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    const int64_t runs = t.records.back()["metrics"].value("gc_runs", int64_t{0});
    std::vector<size_t> gcs;
    for (size_t i = 0; i < t.records.size(); ++i)
      if (t.records[i].value("kind", "") == "gc") gcs.push_back(i);
    constexpr size_t kPicks = 6;
    std::set<size_t> picked;
    for (size_t j = 0; j < std::min(kPicks, gcs.size()); ++j)
      picked.insert(gcs[gcs.size() <= kPicks ? j : j * (gcs.size() - 1) / (kPicks - 1)]);
    for (const size_t i : picked) {
      CAPTURE(t.name, i);
      std::vector<json> recs = t.records;
      recs.erase(recs.begin() + static_cast<std::ptrdiff_t>(i));
      const Checked c = check(recs);
      CHECK_FALSE(c.ok());
      ++dropped;
      if (!c.error.empty()) continue;
      ++by_summary;
      CHECK_THAT(c.summary.front(), Catch::Contains("metrics.gc_runs = " + std::to_string(runs) + ", but the records give " + std::to_string(runs - 1)));
    }
  }
  CHECK(dropped > 0);
  INFO(by_summary << " of " << dropped << " dropped gc records are caught only by the summary");
  SUCCEED();
}

TEST_CASE("check (the CLI): a planted corruption exits 1 or 2 with its name, the clean trace exits 0", "[trace][check][cli]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("triescope-corrupt-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto run = [&](const std::vector<json>& recs, const std::string& name) {
    const fs::path p = dir / (name + ".jsonl");
    {
      std::ofstream out(p);
      for (const json& r : recs) out << r.dump() << "\n";
    }
    const std::string cmd = std::string(TRIESCOPE_BINARY_DIR) + "/app/triescope check " + p.string() + " > " + (dir / "out.txt").string() + " 2>&1";
    const int st = std::system(cmd.c_str());
    std::ifstream in(dir / "out.txt");
    return std::make_pair(WIFEXITED(st) ? WEXITSTATUS(st) : -1, std::string(std::istreambuf_iterator<char>(in), {}));
  };
  for (const testing::SampleTrace& t : testing::sample_traces()) {
    if (t.name != "synthetic_long.json+batch" && t.name != "dsbd_synthetic.json") continue;
    CAPTURE(t.name);
    CHECK(run(t.records, "clean").first == 0);
    for (const Kind& k : kinds()) {
      if (k.tree_only && copies(t.records)) continue;
      CAPTURE(k.name);
      std::vector<json> recs = t.records;
      Expect e;
      REQUIRE(k.plant(recs, e));
      const auto [code, out] = run(recs, "bad");
      INFO(out);
      CHECK(code == (e.error.empty() ? 1 : 2));
      bool named = !e.error.empty() && out.find(e.error) != std::string::npos;
      for (MaskFault f : e.faults) named |= out.find(std::string("row ") + std::to_string(e.row)) != std::string::npos &&
                                            out.find(mask_fault_name(f)) != std::string::npos;
      CHECK(named);
    }
  }
  fs::remove_all(dir);
}
