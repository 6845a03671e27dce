// The constraint's "ranking": "sparse" option in trie and batch beam search
// (StaticConstraint::rank, core/constraint/static_step.h): the same decode
// as the full ranking (mask every log-softmax row, rank every token): the
// same hypotheses and the same trace, numbers within 1e-12 relative (the
// log-normaliser's rounding is the only difference; see test_static_step.cpp).
#include <catch2/catch.hpp>

#include <sstream>

#include "core/config/json_reader.h"
#include "core/constraint/static_constraint.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"

using namespace triescope;

namespace {

// The sparse run's header names its ranking; the runs must agree elsewhere.
void drop_ranking(std::vector<json>& records) {
  for (auto& rec : records)
    if (rec.value("kind", "") == "header" && rec.contains("config") && rec["config"].contains("constraint")) rec["config"]["constraint"].erase("ranking");
}

void check_same(std::vector<json> full, std::vector<json> sparse) {
  drop_ranking(sparse);
  const auto d = trace_diff(full, sparse, {1e-12});
  CAPTURE(d ? d->describe() : std::string());
  CHECK_FALSE(d);
}

}  // namespace

TEST_CASE("sparse ranking: trie and batch beam search decode as with full ranking", "[constraint][static_step]") {
  const uint64_t seed = GENERATE(1u, 2u, 3u);
  const int32_t d = GENERATE(0, 1, 2);
  const bool trie = GENERATE(true, false);
  const bool few = GENERATE(false, true);  // fewer ids than beams
  CAPTURE(seed, d, trie, few);
  const int32_t V = 64, L = 4;
  auto set = std::make_shared<const ConstraintSet>(constraint_set_random(few ? 3 + static_cast<int64_t>(seed) : 300, L, V, seed));
  const TransitionMatrixOptions opt{d, seed % 2 ? CsrLayout::stacked : CsrLayout::compact};
  StaticConstraint full(set, constraint_index_make("vntk", set, opt));
  StaticConstraint sparse(set, constraint_index_make("vntk", set, opt), true);
  SyntheticConfig mc;
  mc.vocab_size = V;
  mc.seed = seed;
  mc.peakiness_q8 = 384;
  BeamConfig cfg;
  cfg.num_beams = 8;
  cfg.max_new_tokens = L;
  const std::vector<int32_t> prompt = {1, 2, 3};
  MemoryTraceSink a, b;
  SyntheticModel m1(mc), m2(mc);
  const DecodeResult r1 = trie ? trie_beam_search(m1, prompt, cfg, &a, {}, &full) : batch_beam_search(m1, prompt, cfg, &a, {}, &full);
  const DecodeResult r2 = trie ? trie_beam_search(m2, prompt, cfg, &b, {}, &sparse) : batch_beam_search(m2, prompt, cfg, &b, {}, &sparse);
  REQUIRE(r1.hypotheses.size() == r2.hypotheses.size());
  for (size_t i = 0; i < r1.hypotheses.size(); ++i) {
    CAPTURE(i);
    CHECK(r2.hypotheses[i].tokens == r1.hypotheses[i].tokens);
    CHECK(r2.hypotheses[i].score == Approx(r1.hypotheses[i].score).epsilon(1e-12));
    CHECK(set->contains(r2.hypotheses[i].tokens));
  }
  if (few) CHECK(static_cast<int64_t>(r2.hypotheses.size()) == set->size());  // every id found, nothing outside C
  check_same(a.records, b.records);
}

TEST_CASE("sparse ranking: the bundled STATIC samples give the same traces", "[constraint][static_step]") {
  for (const char* name : {"static_figure1.json", "static_constrained_beam.json"}) {
    CAPTURE(name);
    const std::string path = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/" + name;
    json j = json_load_file(path);
    MemoryTraceSink full, sparse;
    std::ostringstream os;
    run_sample(sample_parse(j, path), &full, os);
    j["constraint"]["ranking"] = "sparse";
    const SampleRun run = run_sample(sample_parse(j, path), &sparse, os);
    CHECK(os.str().find("VIOLATION") == std::string::npos);
    check_same(full.records, sparse.records);
    bool named = false;
    for (auto& rec : sparse.records)
      if (rec.value("kind", "") == "header") named = rec["config"]["constraint"].value("ranking", "") == "sparse";
    CHECK(named);
  }
}

TEST_CASE("sparse ranking: bad ranking values are named", "[constraint][static_step]") {
  json j = json_load_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/static_figure1.json");
  const std::string origin = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/bad.json";
  json bad = j;
  bad["constraint"]["ranking"] = "dense";
  CHECK_THROWS_WITH(sample_parse(bad, origin), Catch::Contains("constraint.ranking must be full or sparse, got \"dense\""));
  bad = j;
  bad["constraint"]["ranking"] = "sparse";
  bad["constraint"]["impl"] = "pointer_trie";
  CHECK_THROWS_WITH(sample_parse(bad, origin), Catch::Contains("constraint.ranking: \"sparse\" needs impl vntk"));
}
