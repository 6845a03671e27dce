// cuda::DeviceSelector against the reference CpuSelector (core/select/selector.h):
// the same candidates, scores bit for bit, on random rows full of ties (few
// logit levels, repeated rows, equal beam scores) and masked tokens, from
// logits and from log-probs; rows fewer than planned; the fallback past
// kTopkMaxK; and a run over the plan refused by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/select/log_normaliser.h"
#include "core/select/selector.h"
#include "cuda/device_selector.h"
#include "core/select/lse_math.h"
#include "cuda/row_log_normaliser.cuh"
#include "cuda/topk_candidates.cuh"
#include "device_util.h"
#include "test_util.h"

using namespace triescope;
using namespace triescope::testing;

namespace {

struct Rows {
  std::vector<float> logits;  // [rows x vocab]
  std::vector<double> beam;   // [rows]
  std::vector<const float*> ptrs;
};

// Logits on `levels` values (ties inside a row), some rows copies of an
// earlier one and beam scores on 3 values (ties across rows), a share of
// tokens at -inf (masked by an engine).
Rows random_rows(std::mt19937_64& rng, int32_t rows, int32_t vocab, int32_t levels, double p_masked) {
  Rows r;
  r.logits.resize(static_cast<size_t>(rows) * vocab);
  std::uniform_int_distribution<int32_t> level(0, levels - 1);
  std::bernoulli_distribution masked(p_masked), copy(0.3);
  for (int32_t i = 0; i < rows; ++i) {
    float* row = r.logits.data() + static_cast<size_t>(i) * vocab;
    if (i > 0 && copy(rng)) {
      const int32_t src = std::uniform_int_distribution<int32_t>(0, i - 1)(rng);
      std::copy_n(r.logits.data() + static_cast<size_t>(src) * vocab, vocab, row);
      continue;
    }
    for (int32_t v = 0; v < vocab; ++v)
      row[v] = masked(rng) ? -std::numeric_limits<float>::infinity() : 0.37f * static_cast<float>(level(rng)) - 5.0f;
  }
  for (int32_t i = 0; i < rows; ++i) {
    r.beam.push_back(-0.75 * std::uniform_int_distribution<int32_t>(0, 2)(rng));
    r.ptrs.push_back(r.logits.data() + static_cast<size_t>(i) * vocab);
  }
  return r;
}

void require_same(const std::vector<ScoredCandidate>& want, const std::vector<ScoredCandidate>& got) {
  REQUIRE(got.size() == want.size());
  for (size_t j = 0; j < want.size(); ++j) {
    CAPTURE(j, want[j].flat, want[j].score, got[j].flat, got[j].score);
    REQUIRE(got[j].flat == want[j].flat);
    REQUIRE(got[j].score == want[j].score);  // bit for bit: the trace records it
  }
}

}  // namespace

TEST_CASE("cuda DeviceSelector equals CpuSelector bit for bit, ties and masked tokens included", "[cuda][beam][selector]") {
  struct Case {
    int32_t planned_rows, rows, vocab, k, levels;
    double p_masked;
  };
  // one row; a beam step of synthetic_long (15 x 512, k = 30); rows split
  // into chunks (vocab over kRowChunkMin); fewer rows than planned; a row
  // count whose chunks differ from the plan's; more k than finite tokens.
  const Case c = GENERATE(Case{1, 1, 7, 2, 2, 0.0}, Case{15, 15, 512, 30, 6, 0.1}, Case{4, 4, 9000, 8, 40, 0.05},
                          Case{8, 3, 256, 16, 1, 0.0}, Case{6, 5, 20000, 12, 3, 0.0}, Case{3, 3, 64, 40, 4, 0.9});
  const int32_t variant = GENERATE(0, 1);
  const uint64_t seed = test_seed(95000 + static_cast<uint64_t>(c.vocab) * 13 + static_cast<uint64_t>(c.rows) * 7 +
                                  static_cast<uint64_t>(variant));
  CAPTURE(c.planned_rows, c.rows, c.vocab, c.k, c.levels, c.p_masked, seed);
  std::mt19937_64 rng(seed);
  const Rows r = random_rows(rng, c.rows, c.vocab, c.levels, c.p_masked);
  const SelectionShape shape{c.planned_rows, c.vocab, c.k};
  CpuSelector cpu;
  cpu.plan(shape);
  cuda::DeviceSelector dev;
  dev.plan(shape);
  REQUIRE(dev.on_device());

  SECTION("from logits: the device's log-normaliser, subtraction and ranking") {
    const auto want = cpu.run_logits(r.ptrs, r.beam.data(), c.k);
    REQUIRE(!want.empty());
    require_same(want, dev.run_logits(r.ptrs, r.beam.data(), c.k));
    require_same(want, dev.run_logits(r.ptrs, r.beam.data(), c.k));  // a second step on the same buffers
  }
  SECTION("from log-probs a constraint masked") {
    std::vector<double> lp(r.logits.size());
    log_softmax_rows(r.ptrs, c.vocab, lp.data());
    std::bernoulli_distribution mask(0.5);
    for (double& x : lp)
      if (mask(rng)) x = -std::numeric_limits<double>::infinity();
    const auto want = cpu.run_logprobs(lp.data(), c.rows, r.beam.data(), c.k);
    require_same(want, dev.run_logprobs(lp.data(), c.rows, r.beam.data(), c.k));
  }
}

// A model's logits left on the device (core/model/model.h's DeviceLogits):
// the selector gathers the beams' rows (any order, repeats allowed) and
// ranks them there; the candidates and scores are CpuSelector's over the
// same rows on the host, bit for bit.
TEST_CASE("cuda DeviceSelector reads a model's device logits in place, equal to CpuSelector", "[cuda][beam][selector]") {
  const int32_t vocab = GENERATE(7, 512, 9000);
  const uint64_t seed = test_seed(96500 + static_cast<uint64_t>(vocab));
  CAPTURE(vocab, seed);
  std::mt19937_64 rng(seed);
  const int32_t model_rows = 9, beams = 6, k = std::min(12, vocab);
  const Rows all = random_rows(rng, model_rows, vocab, 5, 0.05);
  std::vector<int32_t> row_ids;
  for (int32_t r = 0; r < beams; ++r) row_ids.push_back(std::uniform_int_distribution<int32_t>(0, model_rows - 1)(rng));
  row_ids[1] = row_ids[0];  // two beams on one logits row
  std::vector<const float*> host_rows;
  for (int32_t id : row_ids) host_rows.push_back(all.ptrs[static_cast<size_t>(id)]);
  const std::vector<double> beam(all.beam.begin(), all.beam.begin() + beams);
  CpuSelector cpu;
  cpu.plan({beams, vocab, k});
  cuda::DeviceSelector dev;
  dev.plan({beams, vocab, k});
  REQUIRE(dev.reads_device_logits());
  const auto d_logits = upload(all.logits);
  const auto want = cpu.run_logits(host_rows, beam.data(), k);
  REQUIRE(!want.empty());
  const DeviceLogits in_place{d_logits.data(), nullptr, nullptr, nullptr};
  require_same(want, dev.run_device_logits(in_place, vocab, row_ids, beam.data(), k));
  CHECK_THROWS_WITH(dev.run_device_logits(in_place, vocab + 1, row_ids, beam.data(), k),
                    Catch::Contains("device logits " + std::to_string(vocab + 1) + " wide, planned for " + std::to_string(vocab)));
  // The model's unchecked kernel status, and that of the kernels that built
  // its inputs (the mask rows), ride back with the answer: an error there is
  // thrown, named, and cleared, so the next step reads a clean one; when
  // both failed, the inputs' error is the one named.
  auto model_status = fresh_status();
  auto mask_status = fresh_status();
  const DeviceLogits with_status{d_logits.data(), nullptr, model_status.data(), mask_status.data()};
  const cuda::KernelStatus bad{static_cast<int32_t>(cuda::KernelError::empty_slot), 3, 41};
  TS_CUDA_CHECK(cudaMemcpy(model_status.data(), &bad, sizeof bad, cudaMemcpyHostToDevice), "test: plant a model status");
  CHECK_THROWS_WITH(dev.run_device_logits(with_status, vocab, row_ids, beam.data(), k),
                    Catch::Contains("the model's kernels reported reads an empty KV slot (index 3, value 41)"));
  CHECK(read_status(model_status).code == 0);
  const cuda::KernelStatus bad_row{static_cast<int32_t>(cuda::KernelError::row_out_of_range), 5, 77};
  TS_CUDA_CHECK(cudaMemcpy(model_status.data(), &bad, sizeof bad, cudaMemcpyHostToDevice), "test: plant a model status");
  TS_CUDA_CHECK(cudaMemcpy(mask_status.data(), &bad_row, sizeof bad_row, cudaMemcpyHostToDevice), "test: plant a mask status");
  CHECK_THROWS_WITH(dev.run_device_logits(with_status, vocab, row_ids, beam.data(), k),
                    Catch::Contains("the mask builder's kernels reported") && Catch::Contains("(index 5, value 77)"));
  CHECK(read_status(model_status).code == 0);
  CHECK(read_status(mask_status).code == 0);
  require_same(want, dev.run_device_logits(with_status, vocab, row_ids, beam.data(), k));
  CpuSelector host_only;
  host_only.plan({beams, vocab, k});
  CHECK_FALSE(host_only.reads_device_logits());
  CHECK_THROWS_WITH(host_only.run_device_logits(in_place, vocab, row_ids, beam.data(), k),
                    Catch::Contains("selector cpu: reads no device logits"));
}

// A NaN or +inf logit stops the selection by name (the normaliser's status,
// read back with the answer), from host rows and from device rows.
TEST_CASE("cuda DeviceSelector: a NaN or +inf logit is refused with its row and token", "[cuda][beam][selector]") {
  const float bad = GENERATE(std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity());
  std::vector<float> x(3 * 300, -1.0f);
  x[2 * 300 + 123] = bad;
  std::vector<const float*> rows{x.data(), x.data() + 300, x.data() + 600};
  const std::vector<double> beam{0.0, -1.0, -2.0};
  cuda::DeviceSelector dev;
  dev.plan({3, 300, 6});
  CHECK_THROWS_WITH(dev.run_logits(rows, beam.data(), 6), Catch::Contains("(row 2, token 123)"));
  const auto d_x = upload(x);
  CHECK_THROWS_WITH(dev.run_device_logits({d_x.data(), nullptr, nullptr, nullptr}, 300, {0, 1, 2}, beam.data(), 6),
                    Catch::Contains("logit is NaN or +inf") && Catch::Contains("(row 2, token 123)"));
  x[2 * 300 + 123] = -1.0f;
  CHECK(dev.run_logits(rows, beam.data(), 6).size() == 6u);  // the status was cleared
}

TEST_CASE("cuda DeviceSelector: a k past kTopkMaxK runs on the CPU selector; a run past the plan is refused", "[cuda][beam][selector]") {
  const uint64_t seed = test_seed(95900);
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const Rows r = random_rows(rng, 2, 1200, 50, 0.0);
  const int32_t k = cuda::kTopkMaxK + 2;
  CpuSelector cpu;
  cpu.plan({2, 1200, k});
  cuda::DeviceSelector dev;
  dev.plan({2, 1200, k});
  CHECK_FALSE(dev.on_device());
  require_same(cpu.run_logits(r.ptrs, r.beam.data(), k), dev.run_logits(r.ptrs, r.beam.data(), k));

  cuda::DeviceSelector small;
  small.plan({1, 1200, 4});
  REQUIRE(small.on_device());
  try {
    small.run_logits(r.ptrs, r.beam.data(), 4);
    FAIL("a run over 2 rows on a plan for 1 was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("cuda selector: a step ranks 2 rows, planned for at most 1") != std::string::npos);
  }
}

// The device's log-normaliser replays the CPU pass: the 32 lane sums, the
// maximum and the finished log-normaliser bit for bit. Rows whose maximum rises
// block after block (a rescale every block), rows with -inf, a row of only
// -inf, vocabularies below and off the 32-block.
TEST_CASE("cuda row_log_normalisers: the CPU pass's lane sums and maximum bit for bit", "[cuda][beam][selector][lse]") {
  const int32_t vocab = GENERATE(1, 31, 33, 512, 4099, 49152);
  const uint64_t seed = test_seed(96000 + static_cast<uint64_t>(vocab));
  CAPTURE(vocab, seed);
  std::mt19937_64 rng(seed);
  const int32_t rows = 6;
  std::vector<float> x(static_cast<size_t>(rows) * vocab);
  std::normal_distribution<float> n(0.0f, 4.0f);
  std::bernoulli_distribution masked(0.2);
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t v = 0; v < vocab; ++v) {
      float& e = x[static_cast<size_t>(r) * vocab + v];
      e = r == 0   ? 0.01f * static_cast<float>(v) - 30.0f     // rising: the maximum moves every block
          : r == 1 ? ninf                                      // no finite logit
          : r == 2 ? (masked(rng) ? ninf : n(rng))             // masked tokens
          : r == 3 ? 1e4f * n(rng)                             // wide: most exponentials underflow
                   : n(rng);
    }
  const auto d_x = upload(x);
  auto ws = poisoned<float>(static_cast<size_t>(cuda::row_log_normaliser_workspace_size(rows, vocab)));
  auto lse = poisoned<double>(rows);
  auto parts = poisoned<double>(static_cast<size_t>(rows) * 33);
  auto status = fresh_status();
  cuda::RowLogNormaliserParams p;
  p.logits = d_x.data();
  p.num_rows = rows;
  p.vocab = vocab;
  p.workspace = ws.data();
  p.out_lse = lse.data();
  p.maybe_out_parts = parts.data();
  p.maybe_status = status.data();
  cuda::row_log_normalisers(p, nullptr);
  const auto got_lse = download(lse, rows);
  const auto got_parts = download(parts, static_cast<size_t>(rows) * 33);
  REQUIRE(read_status(status).code == 0);
  for (int32_t r = 0; r < rows; ++r) {
    CAPTURE(r);
    const LogNormaliserParts want = row_log_normaliser_parts(x.data() + static_cast<size_t>(r) * vocab, vocab);
    for (int32_t l = 0; l < 32; ++l) {
      CAPTURE(l);
      REQUIRE(got_parts[static_cast<size_t>(r) * 33 + l] == want.partial[l]);
    }
    if (want.started) REQUIRE(got_parts[static_cast<size_t>(r) * 33 + 32] == want.mx);
    const double want_lse = lse_math::finish(want.partial, want.started, want.mx);
    REQUIRE((got_lse[r] == want_lse || (std::isnan(got_lse[r]) && std::isnan(want_lse))));
    if (r == 1) REQUIRE(got_lse[r] == -std::numeric_limits<double>::infinity());
    REQUIRE(got_lse[r] == row_log_normaliser(x.data() + static_cast<size_t>(r) * vocab, vocab));  // the reference's own value
  }
}

TEST_CASE("cuda row_log_normalisers: a NaN or +inf logit is reported with its row and token", "[cuda][beam][selector][lse]") {
  std::vector<float> x(2 * 100, 0.5f);
  const float bad = GENERATE(std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity());
  x[100 + 77] = bad;
  const auto d_x = upload(x);
  auto ws = poisoned<float>(static_cast<size_t>(cuda::row_log_normaliser_workspace_size(2, 100)));
  auto lse = poisoned<double>(2);
  auto status = fresh_status();
  cuda::RowLogNormaliserParams p;
  p.logits = d_x.data();
  p.num_rows = 2;
  p.vocab = 100;
  p.workspace = ws.data();
  p.out_lse = lse.data();
  p.maybe_status = status.data();
  cuda::row_log_normalisers(p, nullptr);
  const cuda::KernelStatus st = read_status(status);
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::bad_logit));
  CHECK(st.a == 1);
  CHECK(st.b == 77);
}
