#include <catch2/catch.hpp>

#include "core/decode/batch_beam_search.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/synthetic_model.h"
#include "core/select/log_normaliser.h"

using namespace triescope;

namespace {
void require_same(const DecodeResult& a, const DecodeResult& b) {
  REQUIRE(a.hypotheses.size() == b.hypotheses.size());
  for (size_t i = 0; i < a.hypotheses.size(); ++i) {
    CAPTURE(i);
    REQUIRE(a.hypotheses[i].tokens == b.hypotheses[i].tokens);
    const double x = a.hypotheses[i].score, y = b.hypotheses[i].score;
    REQUIRE(std::fabs(x - y) <= 1e-9 * std::max(1.0, std::fabs(y)));
  }
}
}  // namespace

TEST_CASE("trie beam search == batch beam search for every width, seed, EOS rate and GC interval", "[beam]") {
  const int32_t b = GENERATE(1, 2, 3, 5, 8);
  const uint64_t seed = GENERATE(1u, 2u, 3u);
  const int32_t eos_pm = GENERATE(0, 30000, 150000);
  const int32_t gc = GENERATE(0, 1, 3);
  const auto es = GENERATE(EarlyStopping::no, EarlyStopping::yes, EarlyStopping::never);
  CAPTURE(b, seed, eos_pm, gc, static_cast<int>(es));
  SyntheticConfig mc;
  mc.vocab_size = 48;
  mc.seed = seed;
  mc.eos_token = 47;
  mc.eos_per_million = eos_pm;
  mc.peakiness_q8 = 200;
  SyntheticModel model(mc);
  BeamConfig cfg;
  cfg.num_beams = b;
  cfg.max_new_tokens = 12;
  cfg.eos_token = 47;
  cfg.gc_interval = gc;
  cfg.early_stopping = es;
  cfg.length_penalty = seed == 2 ? 0.7 : 1.0;
  const std::vector<int32_t> prompt = {3, 9, 27, 4, 12};
  MemoryTraceSink sink;
  const DecodeResult trie = trie_beam_search(model, prompt, cfg, &sink);
  const DecodeResult batch = batch_beam_search(model, prompt, cfg);
  require_same(trie, batch);
  // trie slots <= batch slots at every step
  for (const auto& r : sink.records)
    if (r["kind"] == "step") REQUIRE(r["kv"]["slots"].get<int64_t>() <= r["kv"]["batch_slots"].get<int64_t>());
  CHECK(trie.metrics.peak_slots <= batch.metrics.peak_slots);
}

TEST_CASE("trie beam search: GC does not change the decode, and shrinks the cache", "[beam][kv]") {
  SyntheticConfig mc;
  mc.vocab_size = 64;
  mc.seed = 77;
  SyntheticModel model(mc);
  BeamConfig cfg;
  cfg.num_beams = 6;
  cfg.max_new_tokens = 40;
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  const DecodeResult no_gc = trie_beam_search(model, prompt, cfg);
  cfg.gc_interval = 4;
  const DecodeResult gc = trie_beam_search(model, prompt, cfg);
  require_same(no_gc, gc);
  CHECK(gc.metrics.gc_runs == 9);
  CHECK(gc.metrics.peak_slots < no_gc.metrics.peak_slots);
}

TEST_CASE("trie paper Figure 1: the trie stores 12 tokens, the batch layout 21", "[beam][sample]") {
  Sample s = sample_load(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/figure1_once_upon_a_time.json");
  std::ostringstream report;
  MemoryTraceSink sink;
  SampleRun run = run_sample(s, &sink, report);
  CHECK(run.metrics["final_slots"] == 12);
  REQUIRE(run.baseline);
  CHECK(run.baseline->metrics.final_slots == 21);
  CHECK(report.str().find("trie stores 12 tokens") != std::string::npos);
  CHECK(report.str().find("batch layout stores 21 tokens") != std::string::npos);
  REQUIRE(run.outputs.size() == 3);
  CHECK(tokens_to_text(*s.model, run.outputs[0].tokens) == "there was a");
  CHECK(tokens_to_text(*s.model, run.outputs[2].tokens) == "in a castle");
  CHECK(run.metrics["gc_runs"] == 1);  // "far" is collected at step 2
}

TEST_CASE("log_softmax_row matches the direct formula", "[beam]") {
  const float logits[4] = {1.0f, 2.0f, -3.0f, 0.5f};
  double out[4];
  log_softmax_row(logits, 4, out);
  double z = 0;
  for (float x : logits) z += std::exp(double(x));
  for (int i = 0; i < 4; ++i) CHECK(out[i] == Approx(double(logits[i]) - std::log(z)).epsilon(1e-12));
}
