// cuda::StaticIndexCuda (the cuda backend's STATIC index) against core's
// VntkIndex in whole constrained decodes (trie and batch) whose traces must
// equal the CPU's, shared by the CPU tests (host run of the kernel's row
// algorithm, triescope_tests_cuda_twins) and the device tests
// (triescope_tests_cuda). Row by row, the index is a twin case
// (twin_cases_static.cpp).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "core/constraint/static_constraint.h"
#include "core/constraint/vntk.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/constraint_report.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"
#include "cuda/static/static_constraint_index.h"
#include "test_util.h"

namespace triescope::testing {

// Records without their wall time, for exact comparison.
inline std::vector<json> strip_seconds(std::vector<json> recs) {
  for (auto& r : recs) {
    if (r.is_object()) {
      r.erase("seconds");
      if (r.contains("metrics") && r["metrics"].is_object()) r["metrics"].erase("seconds");
    }
  }
  return recs;
}

// Trie and batch beam search under the constraint, CPU index vs
// StaticIndexCuda: records identical (but the wall time), same hypotheses.
inline void check_static_decodes(cuda::VerifyExec exec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const CsrLayout layout = std::bernoulli_distribution(0.5)(rng) ? CsrLayout::compact : CsrLayout::stacked;
  const int32_t beams = std::uniform_int_distribution<int32_t>(1, 9)(rng);
  const int32_t V = std::uniform_int_distribution<int32_t>(std::max(4, 2 * beams), 300)(rng);  // decoders need |V| >= 2 b
  const int32_t L = std::uniform_int_distribution<int32_t>(2, 5)(rng);
  const int32_t d = std::uniform_int_distribution<int32_t>(0, std::min(2, L - 1))(rng);
  const int64_t items = random_item_count(rng, 600, V, L);
  SyntheticConfig mc;
  mc.vocab_size = V;
  mc.seed = rng() >> 1;
  mc.peakiness_q8 = std::uniform_int_distribution<int32_t>(64, 1024)(rng);
  BeamConfig cfg;
  cfg.num_beams = beams;
  cfg.max_new_tokens = L + (std::bernoulli_distribution(0.3)(rng) ? 1 : 0);  // one step past L: all masked
  cfg.eos_token = -1;
  cfg.gc_interval = std::uniform_int_distribution<int32_t>(0, 2)(rng);
  std::vector<int32_t> prompt;
  for (int32_t i = std::uniform_int_distribution<int32_t>(1, 6)(rng); i > 0; --i)
    prompt.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(V)));
  CAPTURE(csr_layout_name(layout), V, L, d, items, cfg.num_beams, cfg.max_new_tokens, cfg.gc_interval);
  auto set = std::make_shared<const ConstraintSet>(constraint_set_random(items, L, V, rng()));
  auto cpu = std::make_shared<StaticConstraint>(set, constraint_index_make("vntk", set, {d, layout}));
  auto dev = std::make_shared<StaticConstraint>(set, cuda::constraint_index_make({"vntk", set, {d, layout}}, exec));
  REQUIRE(dynamic_cast<cuda::StaticIndexCuda*>(&dev->index()));
  for (const bool trie : {true, false}) {
    CAPTURE(trie);
    SyntheticModel m1(mc), m2(mc);
    MemoryTraceSink s1, s2;
    DecodeOptions opt;
    const DecodeResult r1 = trie ? trie_beam_search(m1, prompt, cfg, &s1, opt, cpu.get()) : batch_beam_search(m1, prompt, cfg, &s1, opt, cpu.get());
    const DecodeResult r2 = trie ? trie_beam_search(m2, prompt, cfg, &s2, opt, dev.get()) : batch_beam_search(m2, prompt, cfg, &s2, opt, dev.get());
    REQUIRE(r1.hypotheses == r2.hypotheses);
    const auto diff = trace_diff(s1.records, s2.records);
    INFO((diff ? diff->describe() : std::string("equivalent")));
    REQUIRE(!diff);
    REQUIRE(strip_seconds(s1.records) == strip_seconds(s2.records));
    // the constraint records are there (one object per beam)
    bool seen = false;
    for (const auto& rec : s2.records) seen = seen || (rec.value("kind", std::string()) == "step" && rec.contains("constraint"));
    REQUIRE(seen);
    REQUIRE(constraint_compliance(*cpu, r2.hypotheses).in_set == static_cast<int64_t>(r2.hypotheses.size()));
  }
  REQUIRE(dynamic_cast<cuda::StaticIndexCuda&>(dev->index()).fallback_runs() == 0);
}

}  // namespace triescope::testing
