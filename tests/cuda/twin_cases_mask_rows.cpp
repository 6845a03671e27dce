// Twin case of cuda::IncrementalAncestorMask (cuda/incremental_ancestor_mask.h
// over ancestor_mask_extend in cuda/ancestor_mask.cu) against core's
// IncrementalAncestorMask, through beam-like growth, GC and partial retains.
// Host twin: its host half (cuda/mask_row_planner.h) with the plans executed
// on a host table under ancestor_mask_extend's contract (row = table[src] |
// the bits of the in-batch chain), each plan's precondition checked (no
// destination row is a source of the same batch, destinations distinct).
// Device: the class itself, its rows built by the kernel.
#include <catch2/catch.hpp>

#include <set>

#include "core/kv/kv_cache.h"
#include "core/mask/ancestor_mask.h"
#include "cuda/incremental_ancestor_mask.h"
#include "cuda/mask_row_planner.h"
#include "twin_cases.h"

namespace triescope::testing {
namespace {

// The growth, drawn once and replayed on each builder: a prompt chain, then
// per step `beams` children of random frontier nodes and one event (GC and a
// new hint, retain half the parents, or retain them all).
struct GrowthStep {
  std::vector<int32_t> parent_pick;  // index into the frontier, per child
  std::vector<int32_t> tokens;
  int32_t event = 2;  // 0: GC, 1: retain some parents, else retain all
  int32_t hint = 0;   // the capacity hint after a GC
};
struct Growth {
  int32_t hint = 0;
  std::vector<int32_t> prompt;
  std::vector<GrowthStep> steps;
};
// What a builder gave after each extend.
struct RowsSeen {
  BitMask rows;
  int64_t fallback_rows = 0;
  int32_t held_rows = 0;
  bool operator==(const RowsSeen&) const = default;
};
using RowsSeenList = std::vector<RowsSeen>;

Growth random_growth(std::mt19937_64& rng, int32_t beams, int32_t max_steps) {
  Growth g;
  g.hint = std::uniform_int_distribution<int32_t>(1, 200)(rng);  // small hints force widening
  g.prompt.resize(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 70)(rng)));
  for (auto& tok : g.prompt) tok = std::uniform_int_distribution<int32_t>(0, 99)(rng);
  const int32_t steps = std::uniform_int_distribution<int32_t>(1, max_steps)(rng);
  for (int32_t step = 1; step <= steps; ++step) {
    GrowthStep s;
    const int32_t frontier = step == 1 ? 1 : beams;
    for (int32_t k = 0; k < beams; ++k) {
      s.parent_pick.push_back(std::uniform_int_distribution<int32_t>(0, frontier - 1)(rng));
      s.tokens.push_back(std::uniform_int_distribution<int32_t>(0, 99)(rng));
    }
    s.event = std::uniform_int_distribution<int32_t>(0, 9)(rng);
    if (s.event == 0) s.hint = std::uniform_int_distribution<int32_t>(1, 300)(rng);
    g.steps.push_back(std::move(s));
  }
  return g;
}

// Plays the growth as trie beam search runs it; Builder has reset, retain,
// extend, fallback_rows and held_rows (core's and cuda's IncrementalAncestorMask).
template <class Builder>
RowsSeenList growth_replay(const Growth& g, Builder& b) {
  TokenTree t;
  KvSlots slots;
  RowsSeenList seen;
  const auto extend = [&](const std::vector<int32_t>& nodes) {
    BitMask rows = b.extend(t, nodes, slots.num_slots());
    seen.push_back({std::move(rows), b.fallback_rows(), b.held_rows()});
  };
  b.reset(g.hint);
  std::vector<int32_t> frontier = t.add_chain(kNoNode, g.prompt);
  for (int32_t id : frontier) t.node(id).slot = slots.allocate();
  extend(frontier);
  frontier = {frontier.back()};
  for (const GrowthStep& s : g.steps) {
    std::vector<int32_t> parents, fresh;
    for (size_t k = 0; k < s.tokens.size(); ++k) {
      parents.push_back(frontier[static_cast<size_t>(s.parent_pick[k])]);
      fresh.push_back(t.add_child(parents.back(), s.tokens[k], 0.0));
    }
    if (s.event == 0) {  // GC as the decoder runs it: slots move, the builder restarts
      slots.apply(kv_collect_garbage(t, frontier, slots.num_slots()));
      b.reset(s.hint);
    } else if (s.event == 1) {  // only some parents' rows kept: the others take the host-walk fallback
      b.retain(std::vector<int32_t>(parents.begin(), parents.begin() + static_cast<std::ptrdiff_t>(parents.size() / 2)));
    } else {
      b.retain(parents);
    }
    for (int32_t id : fresh) t.node(id).slot = slots.allocate();
    extend(fresh);
    frontier = fresh;
  }
  return seen;
}

// cuda::MaskRowPlanner with its plans executed on a host table.
class PlannerOnHostTable {
 public:
  void reset(int32_t hint) {
    planner_.reset(hint);
    rows_ = words_ = 0;
    table_.clear();
  }
  void retain(const std::vector<int32_t>& nodes) { planner_.retain(nodes); }
  int64_t fallback_rows() const { return planner_.fallback_rows(); }
  int32_t held_rows() const { return planner_.held_rows(); }
  BitMask extend(const TokenTree& t, const std::vector<int32_t>& nodes, int32_t num_slots) {
    const cuda::MaskExtendPlan p = planner_.plan_extend(t, nodes, num_slots);
    REQUIRE(p.table_words % 2 == 0);
    REQUIRE(int64_t{p.table_words} * 64 >= num_slots);
    REQUIRE(p.table_rows >= rows_);
    REQUIRE(p.table_words >= words_);
    resize(p.table_rows, p.table_words);
    for (const auto& [r, w] : p.host_rows) {
      REQUIRE(static_cast<int32_t>(w.size()) == words_);
      std::copy(w.begin(), w.end(), table_.begin() + static_cast<std::ptrdiff_t>(r) * words_);
    }
    std::set<int32_t> sources(p.src_row.begin(), p.src_row.end()), dests(p.dst_row.begin(), p.dst_row.end());
    REQUIRE(dests.size() == nodes.size());
    for (int32_t d : dests) REQUIRE(sources.count(d) == 0);
    BitMask out(static_cast<int32_t>(nodes.size()), num_slots);
    std::vector<std::vector<uint64_t>> rows(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) rows[i] = plan_row(p, i);  // reads first, as the kernel's blocks all read before any dst is a source
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::copy(rows[i].begin(), rows[i].end(), table_.begin() + static_cast<std::ptrdiff_t>(p.dst_row[i]) * words_);
      std::copy_n(rows[i].begin(), out.words_per_row, out.row(static_cast<int32_t>(i)));
    }
    planner_.finish_extend();
    return out;
  }

 private:
  std::vector<uint64_t> plan_row(const cuda::MaskExtendPlan& p, size_t i) const {
    std::vector<uint64_t> row(static_cast<size_t>(words_), 0);
    if (p.src_row[i] >= 0) std::copy_n(table_.begin() + static_cast<std::ptrdiff_t>(p.src_row[i]) * words_, words_, row.begin());
    for (int32_t j = static_cast<int32_t>(i); j != -1; j = p.batch_parent[static_cast<size_t>(j)]) {
      REQUIRE(j <= static_cast<int32_t>(i));
      const int32_t s = p.slot[static_cast<size_t>(j)];
      if (s >= 0) row[static_cast<size_t>(s / 64)] |= uint64_t{1} << (s % 64);
    }
    return row;
  }
  void resize(int32_t r, int32_t w) {
    std::vector<uint64_t> next(static_cast<size_t>(r) * static_cast<size_t>(w), 0);
    for (int32_t i = 0; i < rows_; ++i)
      std::copy_n(table_.begin() + static_cast<std::ptrdiff_t>(i) * words_, words_, next.begin() + static_cast<std::ptrdiff_t>(i) * w);
    table_.swap(next);
    rows_ = r;
    words_ = w;
  }
  cuda::MaskRowPlanner planner_;
  int32_t rows_ = 0, words_ = 0;
  std::vector<uint64_t> table_;
};

[[maybe_unused]] const bool mask_rows = twin_register(TwinSpec<Growth, RowsSeenList>{
    .name = "IncrementalAncestorMask through beam-like growth, GC and partial retains",
    .kernel = "cuda/ancestor_mask.cu",
    .tags = "[cuda][mask]",
    .shapes = {{1}, {3}, {15}},  // beams
    .host_variants = 4,
    .device_variants = 3,
    .inputs = [](std::mt19937_64& rng, const TwinPoint& pt) { return random_growth(rng, static_cast<int32_t>(pt.shape.at(0)), pt.on_host() ? 80 : 60); },
    .cpu =
        [](const Growth& g) {
          triescope::IncrementalAncestorMask cpu;
          return growth_replay(g, cpu);
        },
    .host_twin =
        [](const Growth& g, int32_t) {
          PlannerOnHostTable twin;
          return growth_replay(g, twin);
        },
    .device =
        [](const Growth& g) {
          cuda::IncrementalAncestorMask gpu;
          return growth_replay(g, gpu);
        },
    .compare =
        [](const TwinPoint&, const Growth& g, const RowsSeenList& want, const RowsSeenList& got) {
          REQUIRE(got.size() == want.size());
          for (size_t i = 0; i < want.size(); ++i) {
            CAPTURE(i, g.steps.size());  // extend 0 is the prompt chain, extend i the step i
            REQUIRE(got[i].rows.rows == want[i].rows.rows);
            REQUIRE(got[i].rows.cols == want[i].rows.cols);
            REQUIRE(got[i].rows.words == want[i].rows.words);
            REQUIRE(got[i].fallback_rows == want[i].fallback_rows);
            REQUIRE(got[i].held_rows == want[i].held_rows);
          }
        },
});

}  // namespace
}  // namespace triescope::testing
