// The seed algorithm inside a real engine (issue 32): our trie and batch beam
// search run their forward passes in llama.cpp (llama-cpp-python 0.3.36)
// through the "llama_cpp" model, on the SmolLM2-135M-Instruct GGUF and its
// chat prompt. Checked: the two give the same hypotheses and scores bit for
// bit; their traces pass the mask check; the engine's cells, read back each
// step, are the trie's slots; a mask row seq ids cannot express is refused by
// name; garbage collection frees cells; the state reader refuses what it does
// not know.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/analysis/mask_check.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/llama_cpp/llama_cpp_model.h"
#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"

using namespace triescope;
namespace fs = std::filesystem;

namespace {

const std::string kGguf = std::string(TRIESCOPE_SOURCE_DIR) + "/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";

// The chat prompt of samples/smollm2_trie_beam.json ("What is the capital of France?").
const std::vector<int32_t> kPrompt = {1,    9690, 198,  2683, 359, 253,  5356, 5646, 11173, 3365, 3511, 308, 34519,
                                      28,   7018, 411,  407,  19712, 8182, 2,   198,  1,    4093, 198,  1780, 314,
                                      260,  3575, 282,  4649, 47,   2,    198, 1,    520,  9531, 198};

// One model for the whole file (loading it is most of a small test's time).
// One thread: on 2 shared cores ggml's OpenMP pool at 2 threads stalls in its
// barriers whenever another process holds a core.
LlamaCppModel& model() {
  static LlamaCppModel* m = [] {
    INFO("the GGUF " << kGguf << " (scripts/install-deps.sh puts it there)");
    REQUIRE(fs::is_regular_file(kGguf));
    LlamaCppOptions o;
    o.path = kGguf;
    o.n_ctx = 2048;
    o.threads = 1;
    return new LlamaCppModel(o);
  }();
  return *m;
}

BeamConfig beam(int32_t b) {
  BeamConfig c;
  c.num_beams = b;
  c.max_new_tokens = 24;
  c.eos_token = 2;
  c.length_penalty = 1.0;
  c.early_stopping = EarlyStopping::yes;
  c.gc_interval = 4;
  return c;
}

std::string temp_path(const std::string& name) { return (fs::temp_directory_path() / ("triescope_llama_cpp_" + name)).string(); }

// The trace at `path` through the one mask check (`triescope check`).
MaskCheckReport check_trace(const std::string& path) {
  TraceReplay t(trace_read(path), path);
  return mask_check_trace(t);
}

std::vector<json> steps_of(const std::string& path) {
  std::vector<json> out;
  for (json& r : trace_read(path))
    if (r.value("kind", "") == "step") out.push_back(std::move(r));
  return out;
}

// A chain of `n` tokens from slot 0, position 0 (a prefill of its own).
StepInput chain(int32_t n, int32_t num_slots) {
  StepInput in;
  in.num_slots = num_slots;
  in.mask.reset(n, num_slots);
  for (int32_t i = 0; i < n; ++i) {
    in.tokens.push_back(kPrompt[static_cast<size_t>(i)]);
    in.positions.push_back(i);
    in.slots.push_back(i);
    for (int32_t c = 0; c <= i; ++c) in.mask.set(i, c);
  }
  in.logits_rows = {n - 1};
  return in;
}

// Children of slot `parent` (whose path is slots 0..parent) at `slots`.
StepInput children(int32_t parent, const std::vector<int32_t>& slots, int32_t num_slots) {
  StepInput in;
  in.num_slots = num_slots;
  in.mask.reset(static_cast<int32_t>(slots.size()), num_slots);
  for (size_t i = 0; i < slots.size(); ++i) {
    in.tokens.push_back(504 + static_cast<int32_t>(i));
    in.positions.push_back(parent + 1);
    in.slots.push_back(slots[i]);
    for (int32_t c = 0; c <= parent; ++c) in.mask.set(static_cast<int32_t>(i), c);
    in.mask.set(static_cast<int32_t>(i), slots[i]);
  }
  return in;
}

}  // namespace

TEST_CASE("llama_cpp: trie and batch beam search inside llama.cpp agree bit for bit, and both traces pass check", "[llama_cpp]") {
  LlamaCppModel& m = model();
  for (const int32_t b : {3, 5}) {
    const BeamConfig c = beam(b);
    const std::string tp = temp_path("trie_" + std::to_string(b) + ".jsonl"), bp = temp_path("batch_" + std::to_string(b) + ".jsonl");
    DecodeResult trie, batch;
    {
      TraceFileWriter w(tp);
      trie = trie_beam_search(m, kPrompt, c, &w);
      w.commit();
    }
    {
      TraceFileWriter w(bp);
      batch = batch_beam_search(m, kPrompt, c, &w);
      w.commit();
    }
    INFO("b = " << b);
    REQUIRE(trie.hypotheses.size() == static_cast<size_t>(b));
    REQUIRE(batch.hypotheses.size() == trie.hypotheses.size());
    for (size_t h = 0; h < trie.hypotheses.size(); ++h) {
      CHECK(trie.hypotheses[h].tokens == batch.hypotheses[h].tokens);
      // Exact: every path's cells are in ascending order in both layouts
      // (the cells are packed after each freeing compaction) and no micro-batch
      // reaches the tiled flash-attention kernel, so every logit is the same float.
      CHECK(trie.hypotheses[h].score == batch.hypotheses[h].score);
      CHECK(trie.hypotheses[h].sum_logprobs == batch.hypotheses[h].sum_logprobs);
    }
    CHECK(trie.metrics.gc_runs > 0);

    for (const std::string& p : {tp, bp}) {
      const MaskCheckReport rep = check_trace(p);
      INFO(p << ": " << (rep.violations.empty() ? "" : rep.violations.front().describe()));
      CHECK(rep.ok());
      CHECK(rep.rows > 0);
    }

    // The engine's cells per step, read back: the trie's slots (its last step
    // allocates slots for nodes it never feeds: the cells stay the step
    // before's), the batch layout's b x (n + t) copies; the trie holds fewer.
    for (const std::string& p : {tp, bp}) {
      int64_t prev = -1;
      const std::vector<json> steps = steps_of(p);
      REQUIRE(!steps.empty());
      for (const json& s : steps) {
        INFO(p << " step " << s["step"]);
        REQUIRE(s["kv"].contains("engine_cells"));
        const int64_t cells = s["kv"]["engine_cells"].get<int64_t>();
        if (s.contains("forward")) CHECK(cells == s["kv"]["slots"].get<int64_t>());
        else CHECK(cells == prev);
        prev = cells;
      }
    }
    const std::vector<json> ts = steps_of(tp), bs = steps_of(bp);
    CHECK(ts.back()["kv"]["engine_cells"].get<int64_t>() < bs.back()["kv"]["engine_cells"].get<int64_t>());
    CHECK(bs.back()["kv"]["engine_cells"].get<int64_t>() ==
          int64_t{b} * (static_cast<int64_t>(kPrompt.size()) + bs.back()["step"].get<int64_t>() - 1));
    fs::remove(tp);
    fs::remove(bp);
  }
}

TEST_CASE("llama_cpp: the samples load, run, and name their file and field in errors", "[llama_cpp]") {
  llama_cpp_models_register();
  const std::string dir = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/";
  Sample trie = sample_load(dir + "smollm2_llama_cpp_trie.json");
  Sample batch = sample_load(dir + "smollm2_llama_cpp_batch.json");
  CHECK(trie.model->describe()["engine"] == "llama.cpp");
  CHECK(trie.model->describe()["kv_unified"] == true);
  const std::string out = temp_path("sample.jsonl");
  std::ostringstream report;
  {
    TraceFileWriter w(out);
    const SampleRun r = run_sample(trie, &w, report);
    w.commit();
    REQUIRE(r.baseline);
    REQUIRE(r.outputs.size() == r.baseline->hypotheses.size());
    for (size_t h = 0; h < r.outputs.size(); ++h) CHECK(r.outputs[h].score == r.baseline->hypotheses[h].score);
  }
  CHECK(report.str().find("outputs identical to batch beam search: yes") != std::string::npos);
  CHECK(check_trace(out).ok());
  std::ostringstream report2;
  const SampleRun rb = run_sample(batch, nullptr, report2);
  CHECK(rb.outputs.front().tokens == std::vector<int32_t>({504, 3575, 282, 4649, 314, 7042, 30}));  // "The capital of France is Paris."
  fs::remove(out);

  json j = json_load_file(dir + "smollm2_llama_cpp_trie.json");
  j["model"]["n_ctx"] = 4;
  CHECK_THROWS_WITH(sample_parse(j, dir + "smollm2_llama_cpp_trie.json"), Catch::Contains("smollm2_llama_cpp_trie.json: model.n_ctx"));
  j["model"]["n_ctx"] = 4096;
  j["model"]["path"] = "nowhere.gguf";
  CHECK_THROWS_WITH(sample_parse(j, dir + "smollm2_llama_cpp_trie.json"), Catch::Contains("model.path") && Catch::Contains("nowhere.gguf"));
  j["model"]["path"] = "../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  j["model"]["flash"] = true;
  CHECK_THROWS_WITH(sample_parse(j, dir + "smollm2_llama_cpp_trie.json"), Catch::Contains("model.flash"));
}

TEST_CASE("llama_cpp: a mask row that is no ancestor path is refused by name", "[llama_cpp]") {
  LlamaCppModel& m = model();
  Logits out;
  m.reset();
  m.forward(chain(4, 16), out);
  // A child of slot 3 that skips slot 1 of its path.
  StepInput gap = children(3, {4}, 16);
  gap.mask = BitMask(1, 16);
  for (int32_t c : {0, 2, 3, 4}) gap.mask.set(0, c);
  CHECK_THROWS_WITH(m.forward(gap, out), Catch::Contains("query 0's mask row is not an ancestor path: seq ids cannot express it"));
  // A grandchild that also reads its parent's sibling.
  m.reset();
  m.forward(chain(4, 16), out);
  m.forward(children(3, {4, 5}, 16), out);
  StepInput sib = children(4, {6}, 16);
  sib.mask.set(0, 5);
  CHECK_THROWS_WITH(m.forward(sib, out), Catch::Contains("query 0's mask row is not an ancestor path"));
  // Two children, the second also reading the first: a row of the path 0..4,
  // but at the first one's position.
  m.reset();
  m.forward(chain(4, 16), out);
  StepInput twin = children(3, {4, 5}, 16);
  twin.mask.set(1, 4);
  CHECK_THROWS_WITH(m.forward(twin, out), Catch::Contains("query 1 at position 4 reads its parent slot 4 at position 4"));
  // A position that does not follow its parent's.
  m.reset();
  m.forward(chain(4, 16), out);
  StepInput far = children(3, {4}, 16);
  far.positions[0] = 7;
  CHECK_THROWS_WITH(m.forward(far, out), Catch::Contains("needs a sequence's positions consecutive"));
  // A slot written twice.
  m.reset();
  m.forward(chain(4, 16), out);
  CHECK_THROWS_WITH(m.forward(children(2, {3}, 16), out), Catch::Contains("query 0 writes slot 3, which holds a token already"));
  m.reset();
}

TEST_CASE("llama_cpp: garbage collection frees the engine's cells, a reorder copies sequences", "[llama_cpp]") {
  LlamaCppModel& m = model();
  Logits out;
  m.reset();
  m.forward(chain(6, 16), out);
  CHECK(m.engine_cells() == 6);
  CHECK(m.engine_seq_ids() == 1);
  m.forward(children(5, {6, 7, 8}, 16), out);  // three beams under the chain: one inherits its seq id, two are seq_cp'd
  CHECK(out.rows == 3);
  CHECK(m.engine_cells() == 9);
  CHECK(m.engine_seq_ids() == 3);

  // GC keeping the chain and beam 8 (slots 0..5, 8 -> 0..6): two cells freed.
  CompactionPlan gc;
  gc.old_num_slots = 16;
  gc.src = {0, 1, 2, 3, 4, 5, 8};
  m.compact(gc);
  CHECK(m.engine_cells() == 7);
  CHECK(m.engine_seq_ids() == 1);
  CHECK(m.read_cells().size() == 7);
  // The survivor's child sees the same context as before the GC.
  m.forward(children(6, {7}, 16), out);
  CHECK(m.engine_cells() == 8);

  // A plan that frees the parent of a slot it keeps.
  CompactionPlan hole;
  hole.old_num_slots = 16;
  hole.src = {0, 1, 2, 4, 5, 6, 7};
  CHECK_THROWS_WITH(m.compact(hole), Catch::Contains("keeps slot 4 but frees its parent slot 3"));

  // A GC that frees a chain's tail: the new leaf keeps a seq id cut back to it.
  m.reset();
  m.forward(chain(6, 16), out);
  CompactionPlan tail;
  tail.old_num_slots = 16;
  tail.src = {0, 1, 2, 3};
  m.compact(tail);
  CHECK(m.engine_cells() == 4);
  CHECK(m.engine_seq_ids() == 1);
  m.forward(children(3, {4, 5}, 16), out);
  CHECK(m.engine_cells() == 6);
  // Keep the first three, free the rest, and copy those three: a copy of a seq cut back first.
  CompactionPlan cut;
  cut.old_num_slots = 16;
  cut.src = {0, 1, 2, 0, 1, 2};
  m.compact(cut);
  CHECK(m.engine_cells() == 6);
  CHECK(m.engine_seq_ids() == 2);
  // A copy that branches is refused: only one sequence can be copied at a time.
  CompactionPlan branch;
  branch.old_num_slots = 16;
  m.reset();
  m.forward(chain(3, 16), out);
  m.forward(children(2, {3, 4}, 16), out);
  branch.src = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
  CHECK_THROWS_WITH(m.compact(branch), Catch::Contains("copies slot 2 with two children below it"));

  // The batch layout's reorder: region 0 (slots 0..7) gathered twice: a copy of the sequence.
  m.reset();
  m.forward(chain(6, 16), out);
  CompactionPlan reorder;
  reorder.old_num_slots = 16;
  for (int32_t r = 0; r < 2; ++r)
    for (int32_t p = 0; p < 8; ++p) reorder.src.push_back(p);
  m.compact(reorder);
  CHECK(m.engine_cells() == 12);
  CHECK(m.engine_seq_ids() == 2);
  // The copy's next token (slot 8 + 6, position 6) reads the copy only; its logits equal the original's child's.
  StepInput two;
  two.num_slots = 16;
  two.mask.reset(2, 16);
  for (int32_t r = 0; r < 2; ++r) {
    two.tokens.push_back(504);
    two.positions.push_back(6);
    two.slots.push_back(r * 8 + 6);
    for (int32_t p = 0; p <= 6; ++p) two.mask.set(r, r * 8 + p);
  }
  m.forward(two, out);
  CHECK(std::memcmp(out.row(0), out.row(1), sizeof(float) * static_cast<size_t>(out.vocab)) == 0);
  m.reset();
}

TEST_CASE("llama_cpp: the state reader takes this version's format and refuses anything else by name", "[llama_cpp]") {
  // A blob as llama-cpp-python 0.3.36 writes it: arch, n_stream, cells (pos,
  // n_seq_id, seq ids), then v_trans, n_layer and per layer the K and V rows.
  std::string b;
  auto u32 = [&](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
  u32(5);
  b += "llama";
  u32(1);  // n_stream
  u32(2);  // cells
  for (uint32_t v : {0u, 1u, 3u}) u32(v);      // pos 0, seq ids {3}
  for (uint32_t v : {1u, 2u, 0u, 3u}) u32(v);  // pos 1, seq ids {0, 3}
  u32(0);                                      // v_trans
  u32(1);                                      // n_layer
  u32(1);                                      // K type, row size, 2 rows
  u64(4);
  b.append(8, 'k');
  u32(1);                                      // V type, row size, 2 rows
  u64(4);
  b.append(8, 'v');
  const auto* d = reinterpret_cast<const uint8_t*>(b.data());
  const auto cells = llama_cpp_state_cells(d, b.size(), 1, 256);
  REQUIRE(cells.size() == 2);
  CHECK(cells[0] == LlamaCppCell{0, {3}});
  CHECK(cells[1] == LlamaCppCell{1, {0, 3}});
  CHECK_THROWS_WITH(llama_cpp_state_cells(d, b.size() - 1, 1, 256), Catch::Contains("runs past the end") && Catch::Contains("llama-cpp-python 0.3.36"));
  CHECK_THROWS_WITH(llama_cpp_state_cells(d, b.size(), 2, 256), Catch::Contains("n_layer = 1, the model has 2"));
  std::string extra = b + "x";
  CHECK_THROWS_WITH(llama_cpp_state_cells(reinterpret_cast<const uint8_t*>(extra.data()), extra.size(), 1, 256),
                    Catch::Contains("bytes after the last V row"));
  std::string two = b;
  two[9] = 2;  // n_stream
  CHECK_THROWS_WITH(llama_cpp_state_cells(reinterpret_cast<const uint8_t*>(two.data()), two.size(), 1, 256),
                    Catch::Contains("n_stream = 2, expected 1"));
  CHECK_THROWS_WITH(llama_cpp_state_cells(d, b.size(), 1, 2), Catch::Contains("seq id 3 out of range"));
}
