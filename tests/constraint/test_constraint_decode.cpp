#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>

#include "core/common/file_io.h"
#include "core/common/sha256.h"
#include "core/constraint/static_constraint.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/constraint_report.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/synthetic_model.h"
#include "core/select/log_normaliser.h"

using namespace triescope;

namespace {

SyntheticConfig model_config(int32_t V, uint64_t seed) {
  SyntheticConfig c;
  c.vocab_size = V;
  c.seed = seed;
  c.peakiness_q8 = 384;
  return c;
}

// log P(id | prompt) under the model, by feeding prompt + id as one causal
// chain: the brute-force reference for exhaustive search (no decoder code).
double sequence_logprob(Model& m, const std::vector<int32_t>& prompt, const int32_t* id, int32_t L) {
  m.reset();
  StepInput in;
  const int32_t q = static_cast<int32_t>(prompt.size()) + L - 1;  // the last token needs no logits
  for (int32_t i = 0; i < q; ++i) {
    in.tokens.push_back(i < static_cast<int32_t>(prompt.size()) ? prompt[static_cast<size_t>(i)] : id[i - static_cast<int32_t>(prompt.size())]);
    in.positions.push_back(i);
    in.slots.push_back(i);
  }
  in.num_slots = q;
  in.mask.reset(q, q);
  for (int32_t r = 0; r < q; ++r)
    for (int32_t c = 0; c <= r; ++c) in.mask.set(r, c);
  Logits out;
  m.forward(in, out);
  double sum = 0.0;
  std::vector<double> lp(static_cast<size_t>(m.vocab_size()));
  for (int32_t k = 0; k < L; ++k) {
    log_softmax_row(out.row(static_cast<int32_t>(prompt.size()) - 1 + k), m.vocab_size(), lp.data());
    sum += lp[static_cast<size_t>(id[k])];
  }
  return sum;
}

}  // namespace

TEST_CASE("constrained beam search: every output is an id in C, for every implementation", "[constraint]") {
  const uint64_t seed = GENERATE(1u, 2u, 3u, 4u);
  const std::string impl = GENERATE(as<std::string>{}, "vntk", "pointer_trie", "ppv_exact");
  const int32_t d = GENERATE(0, 2);
  const bool trie = GENERATE(true, false);
  CAPTURE(seed, impl, d, trie);
  const int32_t V = 64, L = 4;
  auto set = std::make_shared<const ConstraintSet>(constraint_set_random(150 + 50 * static_cast<int64_t>(seed), L, V, seed));
  StaticConstraint sc(set, constraint_index_make(impl, set, {d, seed % 2 ? CsrLayout::stacked : CsrLayout::compact}));
  SyntheticModel model(model_config(V, seed));
  BeamConfig cfg;
  cfg.num_beams = 6;
  cfg.max_new_tokens = L;
  MemoryTraceSink sink;
  const std::vector<int32_t> prompt = {1, 2, 3};
  const DecodeResult r = trie ? trie_beam_search(model, prompt, cfg, &sink, {}, &sc) : batch_beam_search(model, prompt, cfg, &sink, {}, &sc);
  REQUIRE(r.hypotheses.size() == 6);
  for (auto& h : r.hypotheses) {
    CAPTURE(h.tokens);
    CHECK(set->contains(h.tokens));
  }
  const auto comp = constraint_compliance(sc, r.hypotheses);
  CHECK(comp.in_set == comp.hypotheses);
  // The trace records every beam's state, valid count and path at every expand step.
  int32_t steps_with_constraint = 0;
  for (auto& rec : sink.records)
    if (rec.value("kind", "") == "step" && rec.contains("constraint")) {
      ++steps_with_constraint;
      for (auto& b : rec["constraint"]) {
        CHECK(b.contains("state"));
        CHECK(b["valid"].get<int32_t>() >= 1);
        const std::string path = b["path"];
        if (impl == "vntk") CHECK(path == (rec["step"].get<int32_t>() - 1 < d ? "dense" : "sparse"));
      }
    }
  CHECK(steps_with_constraint == L);
}

TEST_CASE("constrained beam search with beam width >= the widest level is exhaustive", "[constraint]") {
  const uint64_t seed = GENERATE(range(1u, 7u));
  const std::string impl = GENERATE(as<std::string>{}, "vntk", "pointer_trie");
  const bool trie = GENERATE(true, false);
  CAPTURE(seed, impl, trie);
  const int32_t V = 64, L = 3;
  auto set = std::make_shared<const ConstraintSet>(constraint_set_random(8 + static_cast<int64_t>(seed) * 3, L, V, seed));
  const auto tm = TransitionMatrix::build(*set, {0, CsrLayout::stacked});
  int64_t widest = 0;
  for (int32_t l = 1; l <= L; ++l) widest = std::max(widest, tm.level_size(l));
  StaticConstraint sc(set, constraint_index_make(impl, set, {1, CsrLayout::compact}));
  SyntheticModel model(model_config(V, seed + 100));
  BeamConfig cfg;
  cfg.num_beams = static_cast<int32_t>(widest);
  cfg.max_new_tokens = L;
  const std::vector<int32_t> prompt = {5, 9};
  const DecodeResult r = trie ? trie_beam_search(model, prompt, cfg, nullptr, {}, &sc) : batch_beam_search(model, prompt, cfg, nullptr, {}, &sc);
  // brute force over all of C
  SyntheticModel ref(model_config(V, seed + 100));
  double best = -1e300;
  int64_t best_i = -1;
  for (int64_t i = 0; i < set->size(); ++i) {
    const double s = sequence_logprob(ref, prompt, set->item(i), L);
    if (s > best) {
      best = s;
      best_i = i;
    }
  }
  REQUIRE_FALSE(r.hypotheses.empty());
  CAPTURE(widest, set->size(), best);
  CHECK(r.hypotheses.front().tokens == std::vector<int32_t>(set->item(best_i), set->item(best_i) + L));
  CHECK(r.hypotheses.front().sum_logprobs == Approx(best).epsilon(1e-12));
  // width >= |C| here is not required: every id of C survives (all of C is found).
  CHECK(static_cast<int64_t>(r.hypotheses.size()) == std::min<int64_t>(cfg.num_beams, set->size()));
}

TEST_CASE("samples: Figure 1 and the constrained synthetic beam search run with 100% compliance", "[constraint]") {
  for (const char* name : {"static_figure1.json", "static_constrained_beam.json"}) {
    CAPTURE(name);
    Sample s = sample_load(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/" + name);
    REQUIRE(s.constraint);
    MemoryTraceSink sink;
    std::ostringstream os;
    const SampleRun run = run_sample(s, &sink, os);
    CAPTURE(os.str());
    CHECK(os.str().find("(100%)") != std::string::npos);
    CHECK(os.str().find("VIOLATION") == std::string::npos);
    for (auto& h : run.outputs) CHECK(s.constraint->set().contains(h.tokens));
  }
}

TEST_CASE("samples: the header records the constraint file as the sample names it, with its sha256, from any directory", "[constraint]") {
  const std::string dir = std::string(TRIESCOPE_SOURCE_DIR) + "/samples";
  const std::string bytes = file_read_all(dir + "/static_figure1.txt");
  const std::filesystem::path cwd = std::filesystem::current_path();
  json first;
  for (const std::string& from : {dir, std::string("/")}) {  // an absolute sample path, run from two directories
    CAPTURE(from);
    std::filesystem::current_path(from);
    const Sample s = sample_load(dir + "/static_figure1.json");
    const json set = s.constraint->describe().at("set");
    CHECK(set.at("file") == "static_figure1.txt");
    CHECK(set.at("sha256") == sha256_hex(bytes));
    CHECK_FALSE(set.contains("origin"));
    if (first.is_null()) first = set;
    CHECK(set == first);
  }
  std::filesystem::current_path(cwd);
}

TEST_CASE("sha256_hex: FIPS 180-4 test vectors and the padding's block boundaries", "[constraint]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");  // 56 bytes: the length spills into a second block
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("samples: a bad constraint object is named", "[constraint]") {
  json j = json_load_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/static_figure1.json");
  const std::string origin = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/bad.json";
  json bad = j;
  bad["constraint"]["layout"] = "csc";
  CHECK_THROWS_WITH(sample_parse(bad, origin), Catch::Contains("bad.json: constraint.layout must be \"stacked\" or \"compact\""));
  bad = j;
  bad["constraint"]["colour"] = 1;
  CHECK_THROWS_WITH(sample_parse(bad, origin), Catch::Contains("constraint.colour"));
  bad = j;
  bad["constraint"]["file"] = "missing_ids.txt";
  CHECK_THROWS_WITH(sample_parse(bad, origin), Catch::Contains("missing_ids.txt: cannot open"));
  // Confined to the sample's folder: any readable file's first token was echoed.
  for (const char* outside : {"/etc/passwd", "../README.md", "sub/../../x.txt"}) {
    CAPTURE(outside);
    bad = j;
    bad["constraint"]["file"] = outside;
    CHECK_THROWS_WITH(sample_parse(bad, origin), Catch::Contains("bad.json: constraint.file") && Catch::Contains("must be a relative path inside the sample's folder"));
  }
  bad = j;
  bad["constraint"]["impl"] = "fst";
  CHECK_THROWS_WITH(sample_parse(bad, origin), Catch::Contains("constraint.impl must be one of"));
}
