// The CPU twins added for the CUDA kernels (core/select/topk_candidates.h,
// core/kv/kv_compact.h) and the host half of cuda::IncrementalAncestorMask,
// checked on the CPU against independent oracles, so they are verified on
// machines without a GPU too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>
#include <set>

#include "core/common/error.h"
#include "core/kv/kv_compact.h"
#include "core/mask/ancestor_mask.h"
#include "core/select/topk_candidates.h"
#include "cuda/mask_row_planner.h"
#include "test_util.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("topk_candidates picks by score desc, then flat index asc, skipping masked tokens", "[beam]") {
  const double inf = std::numeric_limits<double>::infinity();
  // row 0: tokens 1 and 2 tie; row 1 ties row 0's best after its beam score
  const std::vector<double> lp = {-3.0, -1.0, -1.0, -inf, /* row 1 */ -0.5, -inf, -2.0, -1.0};
  const std::vector<double> beam = {0.0, -0.5};
  const auto got = topk_candidates(lp.data(), 2, 4, beam.data(), 5);
  const std::vector<ScoredCandidate> want = {{-1.0, 1}, {-1.0, 2}, {-1.0, 4}, {-1.5, 7}, {-2.5, 6}};
  CHECK(got == want);
  CHECK(topk_candidates(lp.data(), 2, 4, beam.data(), 100).size() == 6);  // only 6 finite
  CHECK(topk_candidates(lp.data(), 2, 4, beam.data(), 0).empty());
}

TEST_CASE("topk_candidates equals repeated selection of the best remaining candidate", "[beam]") {
  const int32_t rows = GENERATE(1, 4, 15);
  const int32_t vocab = GENERATE(2, 33, 300);
  const int32_t variant = GENERATE(0, 1);
  const uint64_t seed = test_seed(static_cast<uint64_t>(rows) * 1000 + static_cast<uint64_t>(vocab) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(rows, vocab, variant, seed);
  std::mt19937_64 rng(seed);
  std::vector<double> lp(static_cast<size_t>(rows) * static_cast<size_t>(vocab)), beam(static_cast<size_t>(rows));
  for (auto& x : lp)
    x = std::bernoulli_distribution(0.2)(rng) ? -std::numeric_limits<double>::infinity()
                                              : -0.25 * std::uniform_int_distribution<int32_t>(0, variant ? 1000 : 3)(rng);
  for (auto& b : beam) b = -0.25 * std::uniform_int_distribution<int32_t>(0, 3)(rng);
  const int32_t k = std::uniform_int_distribution<int32_t>(1, 2 * rows + 1)(rng);
  const auto got = topk_candidates(lp.data(), rows, vocab, beam.data(), k);
  // oracle: k linear scans, each taking the best not yet taken
  std::vector<char> taken(lp.size(), 0);
  std::vector<ScoredCandidate> want;
  for (int32_t j = 0; j < k; ++j) {
    int64_t best = -1;
    double best_score = 0;
    for (int64_t f = 0; f < static_cast<int64_t>(lp.size()); ++f) {
      if (taken[static_cast<size_t>(f)] || std::isinf(lp[static_cast<size_t>(f)])) continue;
      const double s = beam[static_cast<size_t>(f / vocab)] + lp[static_cast<size_t>(f)];
      if (best < 0 || s > best_score) {  // strict: the first (lowest flat) of equal scores stays
        best = f;
        best_score = s;
      }
    }
    if (best < 0) break;
    taken[static_cast<size_t>(best)] = 1;
    want.push_back({best_score, best});
  }
  REQUIRE(got == want);
}

TEST_CASE("kv_compact gathers raw rows like compaction_apply and names a bad source", "[kv]") {
  const size_t row_bytes = GENERATE(1, 3, 16, 100);
  const uint64_t seed = test_seed(50 + row_bytes);
  CAPTURE(row_bytes, seed);
  std::mt19937_64 rng(seed);
  CompactionPlan plan;
  plan.old_num_slots = std::uniform_int_distribution<int32_t>(1, 200)(rng);
  for (int32_t i = 0, n = std::uniform_int_distribution<int32_t>(0, 300)(rng); i < n; ++i)
    plan.src.push_back(std::uniform_int_distribution<int32_t>(0, plan.old_num_slots - 1)(rng));
  std::vector<unsigned char> cache(static_cast<size_t>(plan.old_num_slots) * row_bytes);
  for (auto& c : cache) c = static_cast<unsigned char>(rng());
  std::vector<unsigned char> got(plan.src.size() * row_bytes + 1, 0xa5);
  kv_compact(plan, cache.data(), got.data(), row_bytes);
  got.pop_back();
  std::vector<unsigned char> want = cache;
  compaction_apply(plan, want, row_bytes);
  REQUIRE(got == want);

  CompactionPlan bad;
  bad.old_num_slots = 4;
  bad.src = {0, 4};
  std::vector<unsigned char> out(2 * row_bytes);
  std::vector<unsigned char> small(4 * row_bytes);
  CHECK_THROWS_WITH(kv_compact(bad, small.data(), out.data(), row_bytes), Catch::Contains("plan.src[1] = 4"));
}

// cuda::IncrementalAncestorMask's host half: its plans, executed on a host
// table with ancestor_mask_extend's contract (row = table[src] | the bits of
// the in-batch chain), must give core's IncrementalAncestorMask rows. The
// contract's precondition (no destination row is a source of the same batch,
// destinations distinct) is checked on every plan.
namespace {
struct HostTable {
  int32_t rows = 0, words = 0;
  std::vector<uint64_t> data;
  void resize(int32_t r, int32_t w) {
    std::vector<uint64_t> next(static_cast<size_t>(r) * static_cast<size_t>(w), 0);
    for (int32_t i = 0; i < rows; ++i)
      std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(i) * words, words, next.begin() + static_cast<std::ptrdiff_t>(i) * w);
    data.swap(next);
    rows = r;
    words = w;
  }
};

BitMask host_extend(cuda::MaskRowPlanner& planner, HostTable& table, const TokenTree& t, const std::vector<int32_t>& nodes,
                    int32_t num_slots) {
  const cuda::MaskExtendPlan p = planner.plan_extend(t, nodes, num_slots);
  REQUIRE(p.table_words % 2 == 0);
  REQUIRE(int64_t{p.table_words} * 64 >= num_slots);
  REQUIRE(p.table_rows >= table.rows);
  REQUIRE(p.table_words >= table.words);
  table.resize(p.table_rows, p.table_words);
  for (const auto& [r, w] : p.host_rows) {
    REQUIRE(static_cast<int32_t>(w.size()) == table.words);
    std::copy(w.begin(), w.end(), table.data.begin() + static_cast<std::ptrdiff_t>(r) * table.words);
  }
  std::set<int32_t> sources(p.src_row.begin(), p.src_row.end()), dests(p.dst_row.begin(), p.dst_row.end());
  REQUIRE(dests.size() == nodes.size());
  for (int32_t d : dests) REQUIRE(sources.count(d) == 0);
  BitMask out(static_cast<int32_t>(nodes.size()), num_slots);
  std::vector<std::vector<uint64_t>> rows(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {  // reads first, as the kernel's blocks all read before any dst is a source
    auto& row = rows[i];
    row.assign(static_cast<size_t>(table.words), 0);
    if (p.src_row[i] >= 0) std::copy_n(table.data.begin() + static_cast<std::ptrdiff_t>(p.src_row[i]) * table.words, table.words, row.begin());
    for (int32_t j = static_cast<int32_t>(i); j != -1; j = p.batch_parent[static_cast<size_t>(j)]) {
      REQUIRE(j <= static_cast<int32_t>(i));
      if (p.slot[static_cast<size_t>(j)] >= 0) row[static_cast<size_t>(p.slot[static_cast<size_t>(j)] / 64)] |= uint64_t{1} << (p.slot[static_cast<size_t>(j)] % 64);
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::copy(rows[i].begin(), rows[i].end(), table.data.begin() + static_cast<std::ptrdiff_t>(p.dst_row[i]) * table.words);
    std::copy_n(rows[i].begin(), out.words_per_row, out.row(static_cast<int32_t>(i)));
  }
  planner.finish_extend();
  return out;
}
}  // namespace

TEST_CASE("cuda mask row planner, executed on a host table, equals core's IncrementalAncestorMask", "[mask]") {
  const int32_t beams = GENERATE(1, 3, 15);
  const int32_t variant = GENERATE(0, 1, 2, 3);
  const uint64_t seed = test_seed(300 + static_cast<uint64_t>(beams) * 10 + static_cast<uint64_t>(variant));
  CAPTURE(beams, variant, seed);
  std::mt19937_64 rng(seed);
  TokenTree t;
  KvSlots slots;
  IncrementalAncestorMask cpu;
  cuda::MaskRowPlanner planner;
  HostTable table;
  const int32_t hint = std::uniform_int_distribution<int32_t>(1, 200)(rng);
  cpu.reset(hint);
  planner.reset(hint);
  std::vector<int32_t> prompt(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 70)(rng)));
  for (auto& tok : prompt) tok = std::uniform_int_distribution<int32_t>(0, 99)(rng);
  std::vector<int32_t> frontier = t.add_chain(kNoNode, prompt);
  for (int32_t id : frontier) t.node(id).slot = slots.allocate();
  auto compare = [&](const std::vector<int32_t>& nodes) {
    const BitMask want = cpu.extend(t, nodes, slots.num_slots());
    const BitMask got = host_extend(planner, table, t, nodes, slots.num_slots());
    REQUIRE(got == want);
    REQUIRE(planner.fallback_rows() == cpu.fallback_rows());
    REQUIRE(planner.held_rows() == cpu.held_rows());
  };
  compare(frontier);
  frontier = {frontier.back()};
  const int32_t steps = std::uniform_int_distribution<int32_t>(1, 80)(rng);
  for (int32_t step = 1; step <= steps; ++step) {
    CAPTURE(step);
    std::vector<int32_t> parents, fresh;
    for (int32_t k = 0; k < beams; ++k) {
      const int32_t parent = frontier[std::uniform_int_distribution<size_t>(0, frontier.size() - 1)(rng)];
      fresh.push_back(t.add_child(parent, std::uniform_int_distribution<int32_t>(0, 99)(rng), 0.0));
      parents.push_back(parent);
    }
    const int32_t event = std::uniform_int_distribution<int32_t>(0, 9)(rng);
    if (event == 0) {
      const CompactionPlan plan = kv_collect_garbage(t, frontier, slots.num_slots());
      slots.apply(plan);
      const int32_t h = std::uniform_int_distribution<int32_t>(1, 300)(rng);
      cpu.reset(h);
      planner.reset(h);
      table = HostTable{};
    } else if (event == 1) {
      std::vector<int32_t> some(parents.begin(), parents.begin() + static_cast<std::ptrdiff_t>(parents.size() / 2));
      cpu.retain(some);
      planner.retain(some);
    } else {
      cpu.retain(parents);
      planner.retain(parents);
    }
    for (int32_t id : fresh) t.node(id).slot = slots.allocate();
    compare(fresh);
    frontier = fresh;
  }
}
