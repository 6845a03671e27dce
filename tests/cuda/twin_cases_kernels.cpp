// Twin cases of the mask, KV, model and selection kernels (twin_kernels.h):
// fresh random inputs, outputs poisoned before the launch, exact equality for
// ids, bits, positions, slots and the synthetic logits; a stated tolerance
// for the double log-softmax only. Device executions only: these kernels have
// no host-compiled form (their CPU twins are core's own code).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/kv/kv_compact.h"
#include "core/mask/ancestor_mask.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"
#include "device_util.h"
#include "test_util.h"
#include "twin_cases.h"
#include "twin_kernels.h"

namespace triescope::testing {
namespace {


[[maybe_unused]] const bool mask_build = twin_register(TwinSpec<MaskBuildIn, MaskBuildOut>{
    .name = "ancestor_mask_build on random forests",
    .kernel = "cuda/ancestor_mask.cu",
    .tags = "[cuda][mask]",
    .shapes = {{1}, {7}, {64}, {65}, {700}, {5000}},  // nodes
    .device_variants = 3,
    .inputs =
        [](std::mt19937_64& rng, const TwinPoint& pt) {
          MaskBuildIn in;
          const int32_t nodes = dim(pt, 0);
          in.num_slots = nodes + draw(rng, 0, 130);
          in.tree = random_forest(rng, nodes, draw(rng, 1, std::max(1, nodes / 50)), in.num_slots, 0.1, false);
          in.queries.resize(static_cast<size_t>(draw(rng, 1, 300)));
          for (auto& q : in.queries) q = draw(rng, 0, nodes - 1);
          return in;
        },
    .cpu = [](const MaskBuildIn& in) { return MaskBuildOut{ancestor_mask_build(in.tree, in.queries, in.num_slots).words, {}}; },
    .device = mask_build_on_device,
    .compare =
        [](const TwinPoint&, const MaskBuildIn& in, const MaskBuildOut& want, const MaskBuildOut& got) {
          CAPTURE(in.num_slots, in.queries.size());
          CHECK(got.status.code == 0);
          REQUIRE(got.words == want.words);
        },
});

[[maybe_unused]] const bool positions = twin_register(TwinSpec<PositionIdsIn, PositionIdsOut>{
    .name = "position_ids: depths, roots at any depth",
    .kernel = "cuda/ancestor_mask.cu",
    .tags = "[cuda][mask]",
    .shapes = {{1}, {50}, {3000}},  // nodes
    .device_variants = 2,
    .inputs =
        [](std::mt19937_64& rng, const TwinPoint& pt) {
          PositionIdsIn in;
          const int32_t nodes = dim(pt, 0);
          in.tree = random_forest(rng, nodes, std::max(1, nodes / 20), nodes, 0.0, true);
          for (int32_t i = 0; i < nodes; ++i) in.queries.push_back(i);
          std::shuffle(in.queries.begin(), in.queries.end(), rng);
          return in;
        },
    .cpu = [](const PositionIdsIn& in) { return PositionIdsOut{position_ids(in.tree, in.queries), {}}; },
    .device = position_ids_on_device,
    .compare =
        [](const TwinPoint&, const PositionIdsIn&, const PositionIdsOut& want, const PositionIdsOut& got) {
          CHECK(got.status.code == 0);
          REQUIRE(got.positions == want.positions);
        },
});

// ancestor_mask_extend's contract, written out: each new row is its source
// row (none: empty) plus the bits of its in-batch chain, also stored at dst.
MaskExtendOut mask_extend_definition(const MaskExtendIn& in) {
  const auto num_new = static_cast<int32_t>(in.src.size());
  const auto w = static_cast<size_t>(in.words);
  MaskExtendOut want;
  want.out.assign(static_cast<size_t>(num_new) * w, 0);
  want.table = in.table;
  for (int32_t i = 0; i < num_new; ++i) {
    const auto ui = static_cast<size_t>(i);
    uint64_t* row = want.out.data() + ui * w;
    if (in.src[ui] >= 0) std::copy_n(in.table.data() + static_cast<size_t>(in.src[ui]) * w, w, row);
    for (int32_t j = i; j != -1; j = in.batch_parent[static_cast<size_t>(j)]) {
      const int32_t s = in.slot[static_cast<size_t>(j)];
      if (s >= 0) row[s / 64] |= uint64_t{1} << (s % 64);
    }
    std::copy_n(row, w, want.table.data() + static_cast<size_t>(in.dst[ui]) * w);
  }
  return want;
}

MaskExtendIn random_mask_extend(std::mt19937_64& rng, int32_t words) {
  MaskExtendIn in;
  in.words = words;
  in.num_slots = words * 64 - draw(rng, 0, 63);
  const int32_t held = draw(rng, 1, 40), num_new = draw(rng, 1, 60);
  in.table_rows = held + num_new;
  in.table.assign(static_cast<size_t>(in.table_rows) * static_cast<size_t>(words), 0);
  for (int32_t r = 0; r < held; ++r)
    for (int32_t s = 0; s < in.num_slots; ++s)
      if (std::bernoulli_distribution(0.3)(rng)) in.table[static_cast<size_t>(r) * words + static_cast<size_t>(s / 64)] |= uint64_t{1} << (s % 64);
  for (int32_t i = 0; i < num_new; ++i) {
    const bool chained = i > 0 && std::bernoulli_distribution(0.4)(rng);
    in.batch_parent.push_back(chained ? draw(rng, 0, i - 1) : -1);
    in.src.push_back(chained ? in.src[static_cast<size_t>(in.batch_parent.back())] : draw(rng, -1, held - 1));
    in.slot.push_back(std::bernoulli_distribution(0.1)(rng) ? -1 : draw(rng, 0, in.num_slots - 1));
    in.dst.push_back(held + i);  // fresh rows, never a source
  }
  // the destination rows of the table are poisoned too
  std::fill(in.table.begin() + static_cast<std::ptrdiff_t>(held) * words, in.table.end(), 0xa5a5a5a5a5a5a5a5ull);
  return in;
}

[[maybe_unused]] const bool mask_extend = twin_register(TwinSpec<MaskExtendIn, MaskExtendOut>{
    .name = "ancestor_mask_extend: parent's row plus own bit, in-batch chains, poisoned rows",
    .kernel = "cuda/ancestor_mask.cu",
    .tags = "[cuda][mask]",
    .shapes = {{1}, {2}, {3}, {64}},  // words per row
    .device_variants = 3,
    .inputs = [](std::mt19937_64& rng, const TwinPoint& pt) { return random_mask_extend(rng, dim(pt, 0)); },
    .cpu = mask_extend_definition,
    .device = mask_extend_on_device,
    .compare =
        [](const TwinPoint&, const MaskExtendIn&, const MaskExtendOut& want, const MaskExtendOut& got) {
          CHECK(got.status.code == 0);
          CHECK(got.out == want.out);
          CHECK(got.table == want.table);
        },
});

[[maybe_unused]] const bool kv = twin_register(TwinSpec<KvCompactIn, KvCompactOut>{
    .name = "kv_compact byte for byte",
    .kernel = "cuda/kv_compact.cu",
    .tags = "[cuda][kv]",
    .shapes = {{1, 0}, {3, 0}, {4, 0}, {12, 0}, {16, 0}, {96, 0}, {4112, 0},  // row bytes, offset of both buffers
               {1, 4}, {3, 4}, {4, 4}, {12, 4}, {16, 4}, {96, 4}, {4112, 4}},
    .device_variants = 1,
    .inputs =
        [](std::mt19937_64& rng, const TwinPoint& pt) {
          KvCompactIn in;
          in.row_bytes = pt.shape.at(0);
          in.offset = dim(pt, 1);
          in.plan.old_num_slots = draw(rng, 1, 3000);
          for (int32_t i = 0, n = draw(rng, 0, 3000); i < n; ++i) in.plan.src.push_back(draw(rng, 0, in.plan.old_num_slots - 1));
          in.cache.resize(static_cast<size_t>(in.plan.old_num_slots * in.row_bytes) + 16);
          for (auto& c : in.cache) c = static_cast<unsigned char>(rng());
          return in;
        },
    .cpu =
        [](const KvCompactIn& in) {
          KvCompactOut want;
          want.rows.resize(in.plan.src.size() * static_cast<size_t>(in.row_bytes) + 1);
          kv_compact(in.plan, in.cache.data() + in.offset, want.rows.data(), static_cast<size_t>(in.row_bytes));
          want.rows.pop_back();
          want.before.assign(static_cast<size_t>(in.offset), static_cast<unsigned char>(kPoisonByte));  // nothing written before the rows
          return want;
        },
    .device = kv_compact_on_device,
    .compare =
        [](const TwinPoint&, const KvCompactIn& in, const KvCompactOut& want, const KvCompactOut& got) {
          CAPTURE(in.plan.old_num_slots, in.plan.src.size());
          CHECK(got.status.code == 0);
          REQUIRE(got.rows == want.rows);
          CHECK(got.before == want.before);
        },
});

SyntheticConfig random_synthetic(std::mt19937_64& rng, int32_t vocab) {
  SyntheticConfig c;
  c.vocab_size = vocab;
  c.seed = rng();
  c.peakiness_q8 = draw(rng, 0, 64 * 256);
  c.repetitiveness_q8 = draw(rng, 0, 256);
  c.ngram = draw(rng, 1, 8);
  c.eos_token = std::bernoulli_distribution(0.5)(rng) ? draw(rng, 0, vocab - 1) : -1;
  c.eos_per_million = c.eos_token >= 0 ? draw(rng, 0, 1000000) : 0;
  c.perturb_seed = rng();
  c.perturb_q8 = std::bernoulli_distribution(0.5)(rng) ? draw(rng, 0, 4 * 256) : 0;
  return c;
}

SyntheticLogitsIn random_synthetic_inputs(std::mt19937_64& rng, int32_t vocab) {
  SyntheticLogitsIn in;
  in.cfg = random_synthetic(rng, vocab);
  const int32_t num_slots = draw(rng, 1, 2000);
  for (int32_t s = 0; s < num_slots; ++s) {
    in.kv_tokens.push_back(std::bernoulli_distribution(0.1)(rng) ? -1 : draw(rng, 0, vocab - 1));
    in.kv_positions.push_back(draw(rng, 0, 300));
  }
  const int32_t q = draw(rng, 1, 40);
  in.mask = BitMask(q, num_slots);
  for (int32_t r = 0; r < q; ++r) {
    in.query_positions.push_back(draw(rng, 0, 310));
    const double density = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    for (int32_t s = 0; s < num_slots; ++s)
      if (in.kv_tokens[static_cast<size_t>(s)] >= 0 && std::bernoulli_distribution(density)(rng)) in.mask.set(r, s);
  }
  return in;
}

SyntheticLogitsOut synthetic_logits_twin(const SyntheticLogitsIn& in) {
  const int32_t vocab = in.cfg.vocab_size;
  SyntheticLogitsOut want;
  want.fixed.resize(in.query_positions.size() * static_cast<size_t>(vocab));
  for (int32_t r = 0; r < in.mask.rows; ++r) {
    std::vector<int32_t> vt, vp;
    for (int32_t s = 0; s < in.mask.cols; ++s)
      if (in.mask.test(r, s)) {
        vt.push_back(in.kv_tokens[static_cast<size_t>(s)]);
        vp.push_back(in.kv_positions[static_cast<size_t>(s)]);
      }
    synthetic_logits_fixed(in.cfg, vt.data(), vp.data(), static_cast<int32_t>(vt.size()), in.query_positions[static_cast<size_t>(r)],
                           want.fixed.data() + static_cast<size_t>(r) * vocab);
  }
  for (const int32_t x : want.fixed) want.logits.push_back(static_cast<float>(x) * kSyntheticLogitScale);
  return want;
}

[[maybe_unused]] const bool synthetic = twin_register(TwinSpec<SyntheticLogitsIn, SyntheticLogitsOut>{
    .name = "synthetic_logits bit-identical to synthetic_logits_fixed",
    .kernel = "cuda/synthetic_logits.cu",
    .tags = "[cuda][model]",
    .shapes = {{2}, {64}, {513}, {4000}},  // vocab
    .device_variants = 3,
    .inputs = [](std::mt19937_64& rng, const TwinPoint& pt) { return random_synthetic_inputs(rng, dim(pt, 0)); },
    .cpu = synthetic_logits_twin,
    .device = synthetic_logits_on_device,
    .compare =
        [](const TwinPoint&, const SyntheticLogitsIn& in, const SyntheticLogitsOut& want, const SyntheticLogitsOut& got) {
          const SyntheticConfig& c = in.cfg;
          CAPTURE(c.seed, c.peakiness_q8, c.repetitiveness_q8, c.ngram, c.eos_token, c.eos_per_million, c.perturb_q8);
          CHECK(got.status.code == 0);
          REQUIRE(got.fixed == want.fixed);
          REQUIRE(got.logits.size() == want.logits.size());
          REQUIRE(std::memcmp(got.logits.data(), want.logits.data(), want.logits.size() * sizeof(float)) == 0);
        },
});

[[maybe_unused]] const bool log_softmax = twin_register(TwinSpec<LogSoftmaxIn, LogSoftmaxOut>{
    .name = "log_softmax_rows within 1e-12 relative of log_softmax_row",
    .kernel = "cuda/topk_candidates.cu",
    .tags = "[cuda][beam]",
    .shapes = {{1}, {2}, {512}, {32000}},  // vocab
    .device_variants = 2,
    .inputs =
        [](std::mt19937_64& rng, const TwinPoint& pt) {
          LogSoftmaxIn in;
          in.vocab = dim(pt, 0);
          in.logits_rows = draw(rng, 1, 20);
          in.logits.resize(static_cast<size_t>(in.logits_rows) * static_cast<size_t>(in.vocab));
          const float spread = std::uniform_real_distribution<float>(0.01f, 40.0f)(rng);
          for (auto& x : in.logits) x = std::uniform_real_distribution<float>(-spread, spread)(rng);
          in.rows.resize(static_cast<size_t>(draw(rng, 1, 20)));
          for (auto& r : in.rows) r = draw(rng, 0, in.logits_rows - 1);
          return in;
        },
    .cpu =
        [](const LogSoftmaxIn& in) {
          LogSoftmaxOut want;
          want.out.resize(in.rows.size() * static_cast<size_t>(in.vocab));
          for (size_t i = 0; i < in.rows.size(); ++i)
            log_softmax_row(in.logits.data() + static_cast<size_t>(in.rows[i]) * in.vocab, in.vocab, want.out.data() + i * static_cast<size_t>(in.vocab));
          return want;
        },
    .device = log_softmax_on_device,
    .compare =
        [](const TwinPoint&, const LogSoftmaxIn&, const LogSoftmaxOut& want, const LogSoftmaxOut& got) {
          CHECK(got.status.code == 0);
          REQUIRE(got.out.size() == want.out.size());
          size_t bad = 0;
          for (size_t i = 0; i < want.out.size(); ++i)
            if (!(std::fabs(got.out[i] - want.out[i]) <= 1e-12 * std::max(1.0, std::fabs(want.out[i])))) ++bad;
          REQUIRE(bad == 0);
        },
});

std::vector<std::vector<int64_t>> topk_shapes() {
  std::vector<std::vector<int64_t>> shapes;
  for (const int64_t rows : {1, 3, 15, 40})
    for (const int64_t vocab : {2, 17, 512, 5000}) shapes.push_back({rows, vocab});
  return shapes;
}

// Values from a small set, so ties are everywhere (variant 0: 5 levels and
// up to 99% masked); some -inf (a constraint's mask).
TopkIn random_topk(std::mt19937_64& rng, const TwinPoint& pt) {
  TopkIn in;
  in.rows = dim(pt, 0);
  in.vocab = dim(pt, 1);
  in.k = draw(rng, 1, std::min(2 * in.rows + 3, in.rows * in.vocab + 2));
  const int32_t levels = pt.variant == 0 ? 4 : 1000;
  const double p_masked = std::uniform_real_distribution<double>(0.0, pt.variant == 0 ? 0.99 : 0.3)(rng);
  in.logprobs.resize(static_cast<size_t>(in.rows) * static_cast<size_t>(in.vocab));
  in.beam_scores.resize(static_cast<size_t>(in.rows));
  for (auto& x : in.logprobs)
    x = std::bernoulli_distribution(p_masked)(rng) ? -std::numeric_limits<double>::infinity() : -0.125 * draw(rng, 0, levels);
  for (auto& b : in.beam_scores) b = -0.5 * draw(rng, 0, 3);
  return in;
}

[[maybe_unused]] const bool topk = twin_register(TwinSpec<TopkIn, TopkOut>{
    .name = "topk_candidates, ties and masked tokens included",
    .kernel = "cuda/topk_candidates.cu",
    .tags = "[cuda][beam]",
    .shapes = topk_shapes(),  // rows, vocab
    .device_variants = 2,
    .inputs = random_topk,
    .cpu =
        [](const TopkIn& in) {
          TopkOut want;
          for (const auto& c : topk_candidates(in.logprobs.data(), in.rows, in.vocab, in.beam_scores.data(), in.k)) {
            want.score.push_back(c.score);
            want.flat.push_back(c.flat);
          }
          want.count = static_cast<int32_t>(want.flat.size());
          want.flat.resize(static_cast<size_t>(in.k), -1);  // "none" past the count; scores there are not defined
          return want;
        },
    .device = topk_on_device,
    .compare =
        [](const TwinPoint&, const TopkIn& in, const TopkOut& want, const TopkOut& got) {
          CAPTURE(in.k);
          REQUIRE(got.count == want.count);
          for (int32_t j = 0; j < got.count; ++j) {
            CAPTURE(j);
            CHECK(got.flat[static_cast<size_t>(j)] == want.flat[static_cast<size_t>(j)]);
            CHECK(got.score[static_cast<size_t>(j)] == want.score[static_cast<size_t>(j)]);
          }
          for (int32_t j = got.count; j < in.k; ++j) CHECK(got.flat[static_cast<size_t>(j)] == -1);
        },
});

}  // namespace
}  // namespace triescope::testing
