// Every kernel against its CPU twin on fresh random inputs: outputs poisoned
// before the launch, exact equality for ids, bits, positions, slots and the
// synthetic logits; a stated tolerance for the double log-softmax only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/kv/kv_compact.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/synthetic_model.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"
#include "cuda/ancestor_mask.cuh"
#include "cuda/topk_candidates.cuh"
#include "cuda/cuda_synthetic_model.h"
#include "cuda/incremental_ancestor_mask.h"
#include "cuda/kv_compact.cuh"
#include "cuda/synthetic_logits.cuh"
#include "device_util.h"
#include "test_util.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("cuda ancestor_mask_build equals the CPU twin on random forests", "[cuda][mask]") {
  const int32_t nodes = GENERATE(1, 7, 64, 65, 700, 5000);
  const int32_t variant = GENERATE(0, 1, 2);
  const uint64_t seed = test_seed(static_cast<uint64_t>(nodes) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(nodes, variant, seed);
  std::mt19937_64 rng(seed);
  const int32_t num_slots = nodes + std::uniform_int_distribution<int32_t>(0, 130)(rng);
  const int32_t roots = std::uniform_int_distribution<int32_t>(1, std::max(1, nodes / 50))(rng);
  const TokenTree t = random_forest(rng, nodes, roots, num_slots, 0.1, false);
  std::vector<int32_t> queries(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 300)(rng)));
  for (auto& q : queries) q = std::uniform_int_distribution<int32_t>(0, nodes - 1)(rng);
  CAPTURE(num_slots, queries.size());

  const BitMask want = ancestor_mask_build(t, queries, num_slots);
  auto d_parent = upload(parents_of(t));
  auto d_slot = upload(slots_of(t));
  auto d_queries = upload(queries);
  auto d_mask = poisoned<uint64_t>(want.words.size());
  auto d_status = fresh_status();
  cuda::AncestorMaskBuildParams p;
  p.parent = d_parent.data();
  p.slot = d_slot.data();
  p.num_nodes = t.size();
  p.queries = d_queries.data();
  p.num_queries = static_cast<int32_t>(queries.size());
  p.num_slots = num_slots;
  p.words_per_row = want.words_per_row;
  p.mask = d_mask.data();
  p.maybe_status = d_status.data();
  cuda::ancestor_mask_build(p, nullptr);
  const auto got = download(d_mask, want.words.size());
  CHECK(read_status(d_status).code == 0);
  REQUIRE(got == want.words);
}

TEST_CASE("cuda ancestor_mask_build flags a slot outside the mask", "[cuda][mask]") {
  TokenTree t;
  const auto chain = t.add_chain(kNoNode, {1, 2, 3});
  t.node(chain[0]).slot = 0;
  t.node(chain[1]).slot = 1;
  t.node(chain[2]).slot = 9;  // the mask has 4 columns
  auto d_parent = upload(parents_of(t));
  auto d_slot = upload(slots_of(t));
  auto d_queries = upload(std::vector<int32_t>{chain[2]});
  auto d_mask = poisoned<uint64_t>(1);
  auto d_status = fresh_status();
  cuda::AncestorMaskBuildParams p;
  p.parent = d_parent.data();
  p.slot = d_slot.data();
  p.num_nodes = t.size();
  p.queries = d_queries.data();
  p.num_queries = 1;
  p.num_slots = 4;
  p.words_per_row = 1;
  p.mask = d_mask.data();
  p.maybe_status = d_status.data();
  cuda::ancestor_mask_build(p, nullptr);
  const auto st = read_status(d_status);
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::slot_out_of_range));
  CHECK(st.b == 9);
}

TEST_CASE("cuda position_ids equal the CPU twin (depths, roots at any depth)", "[cuda][mask]") {
  const int32_t nodes = GENERATE(1, 50, 3000);
  const int32_t variant = GENERATE(0, 1);
  const uint64_t seed = test_seed(1000 + static_cast<uint64_t>(nodes) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(nodes, variant, seed);
  std::mt19937_64 rng(seed);
  const TokenTree t = random_forest(rng, nodes, std::max(1, nodes / 20), nodes, 0.0, true);
  std::vector<int32_t> queries(static_cast<size_t>(nodes));
  for (int32_t i = 0; i < nodes; ++i) queries[static_cast<size_t>(i)] = i;
  std::shuffle(queries.begin(), queries.end(), rng);
  std::vector<int32_t> root_depth;
  for (const auto& n : t.nodes()) root_depth.push_back(n.parent == kNoNode ? n.depth : -12345);
  const auto want = position_ids(t, queries);
  auto d_parent = upload(parents_of(t));
  auto d_root = upload(root_depth);
  auto d_queries = upload(queries);
  auto d_pos = poisoned<int32_t>(queries.size());
  auto d_status = fresh_status();
  cuda::PositionIdsParams p;
  p.parent = d_parent.data();
  p.maybe_root_depth = d_root.data();
  p.num_nodes = t.size();
  p.queries = d_queries.data();
  p.num_queries = nodes;
  p.positions = d_pos.data();
  p.maybe_status = d_status.data();
  cuda::position_ids(p, nullptr);
  CHECK(read_status(d_status).code == 0);
  REQUIRE(download(d_pos, queries.size()) == want);
}

TEST_CASE("cuda ancestor_mask_extend: parent's row plus own bit, in-batch chains, poisoned rows", "[cuda][mask]") {
  // Direct kernel test against the definition: row = table[src] | bits of the in-batch chain.
  const int32_t words = GENERATE(1, 2, 3, 64);
  const int32_t variant = GENERATE(0, 1, 2);
  const uint64_t seed = test_seed(2000 + static_cast<uint64_t>(words) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(words, variant, seed);
  std::mt19937_64 rng(seed);
  const int32_t num_slots = words * 64 - std::uniform_int_distribution<int32_t>(0, 63)(rng);
  const int32_t held = std::uniform_int_distribution<int32_t>(1, 40)(rng);
  const int32_t num_new = std::uniform_int_distribution<int32_t>(1, 60)(rng);
  const int32_t table_rows = held + num_new;
  std::vector<uint64_t> table(static_cast<size_t>(table_rows) * static_cast<size_t>(words), 0);
  for (int32_t r = 0; r < held; ++r)
    for (int32_t s = 0; s < num_slots; ++s)
      if (std::bernoulli_distribution(0.3)(rng)) table[static_cast<size_t>(r) * words + static_cast<size_t>(s / 64)] |= uint64_t{1} << (s % 64);
  std::vector<int32_t> src(static_cast<size_t>(num_new)), bparent(static_cast<size_t>(num_new)), slot(static_cast<size_t>(num_new)),
      dst(static_cast<size_t>(num_new));
  for (int32_t i = 0; i < num_new; ++i) {
    const bool chained = i > 0 && std::bernoulli_distribution(0.4)(rng);
    bparent[static_cast<size_t>(i)] = chained ? std::uniform_int_distribution<int32_t>(0, i - 1)(rng) : -1;
    src[static_cast<size_t>(i)] = chained ? src[static_cast<size_t>(bparent[static_cast<size_t>(i)])]
                                          : std::uniform_int_distribution<int32_t>(-1, held - 1)(rng);
    slot[static_cast<size_t>(i)] = std::bernoulli_distribution(0.1)(rng) ? -1 : std::uniform_int_distribution<int32_t>(0, num_slots - 1)(rng);
    dst[static_cast<size_t>(i)] = held + i;  // fresh rows, never a source
  }
  std::vector<uint64_t> want_out(static_cast<size_t>(num_new) * static_cast<size_t>(words), 0);
  std::vector<uint64_t> want_table = table;
  for (int32_t i = 0; i < num_new; ++i) {
    uint64_t* row = want_out.data() + static_cast<size_t>(i) * words;
    if (src[static_cast<size_t>(i)] >= 0)
      std::copy_n(table.data() + static_cast<size_t>(src[static_cast<size_t>(i)]) * words, words, row);
    for (int32_t j = i; j != -1; j = bparent[static_cast<size_t>(j)])
      if (slot[static_cast<size_t>(j)] >= 0) row[slot[static_cast<size_t>(j)] / 64] |= uint64_t{1} << (slot[static_cast<size_t>(j)] % 64);
    std::copy_n(row, words, want_table.data() + static_cast<size_t>(dst[static_cast<size_t>(i)]) * words);
  }
  // poison the destination rows of the table too
  std::vector<uint64_t> table_in = table;
  std::fill(table_in.begin() + static_cast<std::ptrdiff_t>(held) * words, table_in.end(), 0xa5a5a5a5a5a5a5a5ull);
  auto d_table = upload(table_in);
  auto d_src = upload(src), d_bp = upload(bparent), d_slot = upload(slot), d_dst = upload(dst);
  auto d_out = poisoned<uint64_t>(want_out.size());
  auto d_status = fresh_status();
  cuda::AncestorMaskExtendParams p;
  p.src_row = d_src.data();
  p.batch_parent = d_bp.data();
  p.slot = d_slot.data();
  p.dst_row = d_dst.data();
  p.num_new = num_new;
  p.table = d_table.data();
  p.table_rows = table_rows;
  p.table_words = words;
  p.num_slots = num_slots;
  p.maybe_out = d_out.data();
  p.out_words = words;
  p.maybe_status = d_status.data();
  cuda::ancestor_mask_extend(p, nullptr);
  CHECK(read_status(d_status).code == 0);
  CHECK(download(d_out, want_out.size()) == want_out);
  CHECK(download(d_table, want_table.size()) == want_table);
}

TEST_CASE("cuda IncrementalAncestorMask equals core's through beam-like growth, GC and partial retains", "[cuda][mask]") {
  const int32_t beams = GENERATE(1, 3, 15);
  const int32_t variant = GENERATE(0, 1, 2);
  const uint64_t seed = test_seed(3000 + static_cast<uint64_t>(beams) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(beams, variant, seed);
  std::mt19937_64 rng(seed);
  TokenTree t;
  KvSlots slots;
  triescope::IncrementalAncestorMask cpu;
  cuda::IncrementalAncestorMask gpu;
  const int32_t hint = std::uniform_int_distribution<int32_t>(1, 200)(rng);  // small hints force widening
  cpu.reset(hint);
  gpu.reset(hint);
  std::vector<int32_t> prompt(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 70)(rng)));
  for (auto& tok : prompt) tok = std::uniform_int_distribution<int32_t>(0, 99)(rng);
  std::vector<int32_t> frontier = t.add_chain(kNoNode, prompt);
  for (int32_t id : frontier) t.node(id).slot = slots.allocate();
  auto compare = [&](const std::vector<int32_t>& nodes, const char* what) {
    CAPTURE(what, nodes.size(), slots.num_slots());
    const BitMask want = cpu.extend(t, nodes, slots.num_slots());
    const BitMask got = gpu.extend(t, nodes, slots.num_slots());
    REQUIRE(got.rows == want.rows);
    REQUIRE(got.cols == want.cols);
    REQUIRE(got.words == want.words);
    REQUIRE(gpu.fallback_rows() == cpu.fallback_rows());
  };
  compare(frontier, "prefill chain");
  frontier = {frontier.back()};
  const int32_t steps = std::uniform_int_distribution<int32_t>(1, 60)(rng);
  for (int32_t step = 1; step <= steps; ++step) {
    CAPTURE(step);
    std::vector<int32_t> parents, fresh;
    for (int32_t k = 0; k < beams; ++k) {
      const int32_t parent = frontier[static_cast<size_t>(std::uniform_int_distribution<size_t>(0, frontier.size() - 1)(rng))];
      const int32_t id = t.add_child(parent, std::uniform_int_distribution<int32_t>(0, 99)(rng), 0.0);
      parents.push_back(parent);
      fresh.push_back(id);
    }
    const int32_t event = std::uniform_int_distribution<int32_t>(0, 9)(rng);
    if (event == 0) {
      // GC as the decoder runs it: slots move, both builders restart
      const CompactionPlan plan = kv_collect_garbage(t, frontier, slots.num_slots());
      slots.apply(plan);
      const int32_t h = std::uniform_int_distribution<int32_t>(1, 300)(rng);
      cpu.reset(h);
      gpu.reset(h);
    } else if (event == 1) {
      // keep only some parents' rows: the others take the host-walk fallback
      std::vector<int32_t> some(parents.begin(), parents.begin() + static_cast<std::ptrdiff_t>(parents.size() / 2));
      cpu.retain(some);
      gpu.retain(some);
    } else {
      cpu.retain(parents);
      gpu.retain(parents);
    }
    for (int32_t id : fresh) t.node(id).slot = slots.allocate();
    compare(fresh, "expand");
    REQUIRE(gpu.held_rows() == cpu.held_rows());
    frontier = fresh;
  }
}

TEST_CASE("cuda kv_compact equals the CPU twin byte for byte", "[cuda][kv]") {
  const int64_t row_bytes = GENERATE(1, 3, 4, 12, 16, 96, 4112);
  const int32_t offset = GENERATE(0, 4);  // misaligned base: the narrower access paths
  const uint64_t seed = test_seed(4000 + static_cast<uint64_t>(row_bytes) * 10 + static_cast<uint64_t>(offset));
  CAPTURE(row_bytes, offset, seed);
  std::mt19937_64 rng(seed);
  CompactionPlan plan;
  plan.old_num_slots = std::uniform_int_distribution<int32_t>(1, 3000)(rng);
  const int32_t n = std::uniform_int_distribution<int32_t>(0, 3000)(rng);
  for (int32_t i = 0; i < n; ++i) plan.src.push_back(std::uniform_int_distribution<int32_t>(0, plan.old_num_slots - 1)(rng));
  CAPTURE(plan.old_num_slots, n);
  std::vector<unsigned char> cache(static_cast<size_t>(plan.old_num_slots * row_bytes) + 16);
  for (auto& c : cache) c = static_cast<unsigned char>(rng());
  std::vector<unsigned char> want(static_cast<size_t>(n * row_bytes) + 1);
  kv_compact(plan, cache.data() + offset, want.data(), static_cast<size_t>(row_bytes));
  want.resize(static_cast<size_t>(n * row_bytes));

  auto d_cache = upload(cache);
  auto d_dst = poisoned<unsigned char>(want.size() + 16);
  auto d_plan = upload(plan.src);
  auto d_status = fresh_status();
  cuda::KvCompactParams p;
  p.src = d_cache.data() + offset;
  p.dst = d_dst.data() + offset;
  p.plan_src = d_plan.data();
  p.new_num_slots = n;
  p.old_num_slots = plan.old_num_slots;
  p.row_bytes = row_bytes;
  p.maybe_status = d_status.data();
  cuda::kv_compact(p, nullptr);
  auto got = download(d_dst, want.size() + 16);
  CHECK(read_status(d_status).code == 0);
  REQUIRE(std::vector<unsigned char>(got.begin() + offset, got.begin() + offset + static_cast<std::ptrdiff_t>(want.size())) == want);
  // nothing written outside the destination rows
  for (int32_t i = 0; i < offset; ++i) CHECK(got[static_cast<size_t>(i)] == kPoisonByte);
}

TEST_CASE("cuda kv_compact flags a source slot outside the old cache", "[cuda][kv]") {
  std::vector<int32_t> cache(8, 7);
  auto d_cache = upload(cache);
  auto d_dst = poisoned<int32_t>(3);
  auto d_plan = upload(std::vector<int32_t>{0, 8, 1});
  auto d_status = fresh_status();
  cuda::KvCompactParams p;
  p.src = d_cache.data();
  p.dst = d_dst.data();
  p.plan_src = d_plan.data();
  p.new_num_slots = 3;
  p.old_num_slots = 8;
  p.row_bytes = 4;
  p.maybe_status = d_status.data();
  cuda::kv_compact(p, nullptr);
  const auto st = read_status(d_status);
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::src_out_of_range));
  CHECK(st.a == 1);
  CHECK(st.b == 8);
}

namespace {
SyntheticConfig random_synthetic(std::mt19937_64& rng, int32_t vocab) {
  SyntheticConfig c;
  c.vocab_size = vocab;
  c.seed = rng();
  c.peakiness_q8 = std::uniform_int_distribution<int32_t>(0, 64 * 256)(rng);
  c.repetitiveness_q8 = std::uniform_int_distribution<int32_t>(0, 256)(rng);
  c.ngram = std::uniform_int_distribution<int32_t>(1, 8)(rng);
  c.eos_token = std::bernoulli_distribution(0.5)(rng) ? std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng) : -1;
  c.eos_per_million = c.eos_token >= 0 ? std::uniform_int_distribution<int32_t>(0, 1000000)(rng) : 0;
  c.perturb_seed = rng();
  c.perturb_q8 = std::bernoulli_distribution(0.5)(rng) ? std::uniform_int_distribution<int32_t>(0, 4 * 256)(rng) : 0;
  return c;
}
}  // namespace

TEST_CASE("cuda synthetic_logits are bit-identical to synthetic_logits_fixed", "[cuda][model]") {
  const int32_t vocab = GENERATE(2, 64, 513, 4000);
  const int32_t variant = GENERATE(0, 1, 2);
  const uint64_t seed = test_seed(5000 + static_cast<uint64_t>(vocab) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(vocab, variant, seed);
  std::mt19937_64 rng(seed);
  const SyntheticConfig cfg = random_synthetic(rng, vocab);
  CAPTURE(cfg.seed, cfg.peakiness_q8, cfg.repetitiveness_q8, cfg.ngram, cfg.eos_token, cfg.eos_per_million, cfg.perturb_q8);
  const int32_t num_slots = std::uniform_int_distribution<int32_t>(1, 2000)(rng);
  std::vector<int32_t> kv_tok(static_cast<size_t>(num_slots)), kv_pos(static_cast<size_t>(num_slots));
  for (int32_t s = 0; s < num_slots; ++s) {
    const bool empty = std::bernoulli_distribution(0.1)(rng);
    kv_tok[static_cast<size_t>(s)] = empty ? -1 : std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
    kv_pos[static_cast<size_t>(s)] = std::uniform_int_distribution<int32_t>(0, 300)(rng);
  }
  const int32_t q = std::uniform_int_distribution<int32_t>(1, 40)(rng);
  BitMask mask(q, num_slots);
  std::vector<int32_t> qpos(static_cast<size_t>(q));
  std::vector<int32_t> want(static_cast<size_t>(q) * static_cast<size_t>(vocab));
  for (int32_t r = 0; r < q; ++r) {
    qpos[static_cast<size_t>(r)] = std::uniform_int_distribution<int32_t>(0, 310)(rng);
    const double density = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    std::vector<int32_t> vt, vp;
    for (int32_t s = 0; s < num_slots; ++s)
      if (kv_tok[static_cast<size_t>(s)] >= 0 && std::bernoulli_distribution(density)(rng)) {
        mask.set(r, s);
        vt.push_back(kv_tok[static_cast<size_t>(s)]);
        vp.push_back(kv_pos[static_cast<size_t>(s)]);
      }
    synthetic_logits_fixed(cfg, vt.data(), vp.data(), static_cast<int32_t>(vt.size()), qpos[static_cast<size_t>(r)],
                           want.data() + static_cast<size_t>(r) * vocab);
  }
  auto d_tok = upload(kv_tok), d_pos = upload(kv_pos), d_qpos = upload(qpos);
  auto d_mask = upload(mask.words);
  auto d_fixed = poisoned<int32_t>(want.size());
  auto d_logits = poisoned<float>(want.size());
  auto d_status = fresh_status();
  cuda::SyntheticLogitsParams p;
  p.cfg = cuda::synthetic_logits_config(cfg);
  p.kv_tokens = d_tok.data();
  p.kv_positions = d_pos.data();
  p.num_slots = num_slots;
  p.mask = d_mask.data();
  p.words_per_row = mask.words_per_row;
  p.query_positions = d_qpos.data();
  p.num_queries = q;
  p.maybe_out_fixed = d_fixed.data();
  p.maybe_out_logits = d_logits.data();
  p.maybe_status = d_status.data();
  cuda::synthetic_logits(p, nullptr);
  CHECK(read_status(d_status).code == 0);
  REQUIRE(download(d_fixed, want.size()) == want);
  const auto got = download(d_logits, want.size());
  std::vector<float> want_f(want.size());
  for (size_t i = 0; i < want.size(); ++i) want_f[i] = static_cast<float>(want[i]) * kSyntheticLogitScale;
  REQUIRE(std::memcmp(got.data(), want_f.data(), want_f.size() * sizeof(float)) == 0);
}

TEST_CASE("cuda synthetic_logits reports a query that reads an empty slot", "[cuda][model]") {
  std::vector<int32_t> kv_tok{3, -1, 5}, kv_pos{0, 1, 2}, qpos{2};
  BitMask mask(1, 3);
  mask.set(0, 0);
  mask.set(0, 1);
  auto d_tok = upload(kv_tok), d_pos = upload(kv_pos), d_qpos = upload(qpos);
  auto d_mask = upload(mask.words);
  auto d_fixed = poisoned<int32_t>(8);
  auto d_status = fresh_status();
  cuda::SyntheticLogitsParams p;
  p.cfg.vocab_size = 8;
  p.kv_tokens = d_tok.data();
  p.kv_positions = d_pos.data();
  p.num_slots = 3;
  p.mask = d_mask.data();
  p.words_per_row = 1;
  p.query_positions = d_qpos.data();
  p.num_queries = 1;
  p.maybe_out_fixed = d_fixed.data();
  p.maybe_status = d_status.data();
  cuda::synthetic_logits(p, nullptr);
  const auto st = read_status(d_status);
  CHECK(st.code == static_cast<int32_t>(cuda::KernelError::empty_slot));
  CHECK(st.b == 1);
}

TEST_CASE("cuda log_softmax_rows agrees with log_softmax_row within 1e-12 relative", "[cuda][beam]") {
  const int32_t vocab = GENERATE(1, 2, 512, 32000);
  const int32_t variant = GENERATE(0, 1);
  const uint64_t seed = test_seed(6000 + static_cast<uint64_t>(vocab) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(vocab, variant, seed);
  std::mt19937_64 rng(seed);
  const int32_t logits_rows = std::uniform_int_distribution<int32_t>(1, 20)(rng);
  std::vector<float> logits(static_cast<size_t>(logits_rows) * static_cast<size_t>(vocab));
  const float spread = std::uniform_real_distribution<float>(0.01f, 40.0f)(rng);
  for (auto& x : logits) x = std::uniform_real_distribution<float>(-spread, spread)(rng);
  std::vector<int32_t> rows(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 20)(rng)));
  for (auto& r : rows) r = std::uniform_int_distribution<int32_t>(0, logits_rows - 1)(rng);
  std::vector<double> want(rows.size() * static_cast<size_t>(vocab));
  for (size_t i = 0; i < rows.size(); ++i)
    log_softmax_row(logits.data() + static_cast<size_t>(rows[i]) * vocab, vocab, want.data() + i * static_cast<size_t>(vocab));
  auto d_logits = upload(logits);
  auto d_rows = upload(rows);
  auto d_out = poisoned<double>(want.size());
  auto d_ws = poisoned<double>(static_cast<size_t>(cuda::log_softmax_workspace_size(static_cast<int32_t>(rows.size()), vocab)));
  auto d_status = fresh_status();
  cuda::LogSoftmaxParams p;
  p.logits = d_logits.data();
  p.logits_rows = logits_rows;
  p.vocab = vocab;
  p.maybe_rows = d_rows.data();
  p.num_rows = static_cast<int32_t>(rows.size());
  p.out = d_out.data();
  p.workspace = d_ws.data();
  p.maybe_status = d_status.data();
  cuda::log_softmax_rows(p, nullptr);
  CHECK(read_status(d_status).code == 0);
  const auto got = download(d_out, want.size());
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-12 * std::max(1.0, std::fabs(want[i])))) ++bad;
  REQUIRE(bad == 0);
}

TEST_CASE("cuda topk_candidates equals the CPU twin, ties and masked tokens included", "[cuda][beam]") {
  const int32_t rows = GENERATE(1, 3, 15, 40);
  const int32_t vocab = GENERATE(2, 17, 512, 5000);
  const int32_t variant = GENERATE(0, 1);
  const uint64_t seed = test_seed(7000 + static_cast<uint64_t>(rows) * 100000 + static_cast<uint64_t>(vocab) * 10 +
                                  static_cast<uint64_t>(variant));
  CAPTURE(rows, vocab, variant, seed);
  std::mt19937_64 rng(seed);
  const int32_t k = std::uniform_int_distribution<int32_t>(1, std::min(2 * rows + 3, rows * vocab + 2))(rng);
  // values from a small set so ties are everywhere; some -inf (a constraint's mask)
  const int32_t levels = variant == 0 ? 4 : 1000;
  const double p_masked = std::uniform_real_distribution<double>(0.0, variant == 0 ? 0.99 : 0.3)(rng);
  std::vector<double> lp(static_cast<size_t>(rows) * static_cast<size_t>(vocab)), beam(static_cast<size_t>(rows));
  for (auto& x : lp)
    x = std::bernoulli_distribution(p_masked)(rng) ? -std::numeric_limits<double>::infinity()
                                                   : -0.125 * std::uniform_int_distribution<int32_t>(0, levels)(rng);
  for (auto& b : beam) b = -0.5 * std::uniform_int_distribution<int32_t>(0, 3)(rng);
  CAPTURE(k, p_masked);
  const auto want = topk_candidates(lp.data(), rows, vocab, beam.data(), k);
  auto d_lp = upload(lp), d_beam = upload(beam);
  const auto ws_entries = static_cast<size_t>(cuda::topk_candidates_workspace_size(rows, vocab, k));
  auto d_ws_score = poisoned<double>(ws_entries);
  auto d_ws_flat = poisoned<int64_t>(ws_entries);
  auto d_score = poisoned<double>(static_cast<size_t>(k));
  auto d_flat = poisoned<int64_t>(static_cast<size_t>(k));
  auto d_count = poisoned<int32_t>(1);
  cuda::TopkCandidatesParams p;
  p.logprobs = d_lp.data();
  p.beam_scores = d_beam.data();
  p.num_rows = rows;
  p.vocab = vocab;
  p.k = k;
  p.workspace_score = d_ws_score.data();
  p.workspace_flat = d_ws_flat.data();
  p.out_score = d_score.data();
  p.out_flat = d_flat.data();
  p.out_count = d_count.data();
  cuda::topk_candidates(p, nullptr);
  const int32_t count = download(d_count, 1)[0];
  REQUIRE(count == static_cast<int32_t>(want.size()));
  const auto score = download(d_score, static_cast<size_t>(k));
  const auto flat = download(d_flat, static_cast<size_t>(k));
  for (int32_t j = 0; j < count; ++j) {
    CAPTURE(j);
    CHECK(flat[static_cast<size_t>(j)] == want[static_cast<size_t>(j)].flat);
    CHECK(score[static_cast<size_t>(j)] == want[static_cast<size_t>(j)].score);
  }
  for (int32_t j = count; j < k; ++j) CHECK(flat[static_cast<size_t>(j)] == -1);
}
