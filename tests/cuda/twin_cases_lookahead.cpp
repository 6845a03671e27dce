// Twin cases of lookahead's device verification (cuda/lookahead_verify.cu
// over cuda/lookahead_verify.h) against the CPU's rules in
// core/decode/lookahead.cpp: argmax_row's tie rule and the matching walk.
// Host twin: the block argmax (one thread, or host threads at a barrier) and
// the serial match; device: the verifier object run on the device against
// the same object run on the host, whose greedy rows are argmax_row's.
#include <catch2/catch.hpp>

#include <limits>
#include <map>

#include "core/decode/lookahead.h"
#include "core/decode/tree_step.h"
#include "cuda/lookahead_verify.h"
#include "host_block.h"
#include "twin_cases.h"

namespace triescope::testing {
namespace {

// Rows of NaN, infinities, signed zeros, small integers (ties); every fifth row starts with NaN.
using Rows = std::vector<std::vector<float>>;
using Argmaxes = std::vector<int32_t>;

Rows random_rows(std::mt19937_64& rng, const TwinPoint&) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, inf, -inf, 0.0f, -0.0f, 1.0f, -1.0f};
  Rows rows;
  for (int rep = 0; rep < 80; ++rep) {
    std::vector<float> row(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 300)(rng)));
    for (auto& x : row) {
      const int k = std::uniform_int_distribution<int>(0, 9)(rng);
      x = k < 7 ? specials[k] : static_cast<float>(std::uniform_int_distribution<int>(-3, 3)(rng));
    }
    if (rep % 5 == 0) row[0] = nan;
    rows.push_back(std::move(row));
  }
  return rows;
}

Argmaxes argmax_block_rows(const Rows& rows, int32_t threads) {
  Argmaxes out;
  for (const auto& row : rows) {
    std::vector<float> s_val(static_cast<size_t>(threads));
    std::vector<int32_t> s_idx(static_cast<size_t>(threads));
    int32_t got = -1;
    run_block(threads, [&](auto& blk) {
      const int32_t g = cuda::argmax_row_block(row.data(), static_cast<int32_t>(row.size()), s_val.data(), s_idx.data(), blk);
      if (blk.tid() == 0) got = g;
    });
    out.push_back(got);
  }
  return out;
}

[[maybe_unused]] const bool argmax = twin_register(TwinSpec<Rows, Argmaxes>{
    .name = "argmax equals argmax_row, NaN, infinities, signed zeros and ties included",
    .kernel = "cuda/lookahead_verify.cu",
    .tags = "[cuda][lookahead]",
    .host_variants = 3,
    .host_threads = {1, 2, 5, 16},
    .inputs = random_rows,
    .cpu =
        [](const Rows& rows) {
          Argmaxes out;
          for (const auto& row : rows) out.push_back(argmax_row(row.data(), static_cast<int32_t>(row.size())));
          return out;
        },
    .host_twin = argmax_block_rows,
    .compare =
        [](const TwinPoint&, const Rows& rows, const Argmaxes& want, const Argmaxes& got) {
          REQUIRE(got.size() == want.size());
          for (size_t rep = 0; rep < want.size(); ++rep) {
            CAPTURE(rep, rows[rep].size());
            REQUIRE(got[rep] == want[rep]);
          }
        },
});

// Candidate n-grams laid out as lookahead_decode does (row 0 = root, then
// the candidate nodes), as independent chains or merged into a trie, and the
// greedy token of each row.
struct PathCase {
  bool trie = false;
  std::vector<std::vector<int32_t>> cands;
  std::vector<int32_t> cand_row, cand_parent, cand_token;
  std::vector<std::vector<int32_t>> chains;           // independent: candidate indices per chain
  std::map<std::pair<int32_t, int32_t>, int32_t> child;  // trie: (parent index, token) -> index
  std::vector<int32_t> greedy;                         // [rows]
};
using Paths = std::vector<PathCase>;
using Matches = std::vector<std::vector<int32_t>>;

void path_layout(PathCase& c) {
  for (const auto& cand : c.cands) {
    c.chains.emplace_back();
    int32_t parent = -1;
    for (int32_t tok : cand) {
      int32_t idx = static_cast<int32_t>(c.cand_row.size());
      if (c.trie) {
        auto it = c.child.find({parent, tok});
        if (it != c.child.end()) {
          parent = it->second;
          continue;
        }
        c.child[{parent, tok}] = idx;
      } else {
        c.chains.back().push_back(idx);
      }
      c.cand_row.push_back(idx + 1);
      c.cand_parent.push_back(parent);
      c.cand_token.push_back(tok);
      parent = idx;
    }
  }
}

Paths random_paths(std::mt19937_64& rng, const TwinPoint&) {
  Paths paths;
  for (int rep = 0; rep < 300; ++rep) {
    PathCase c;
    c.trie = rep % 2 == 0;
    const int32_t V = std::uniform_int_distribution<int32_t>(2, 5)(rng);  // few tokens: shared prefixes and ties
    const int32_t G = std::uniform_int_distribution<int32_t>(0, 6)(rng), L = std::uniform_int_distribution<int32_t>(1, 4)(rng);
    c.cands.resize(static_cast<size_t>(G));
    for (auto& cand : c.cands)
      for (int32_t i = 0; i < L; ++i) cand.push_back(std::uniform_int_distribution<int32_t>(0, V - 1)(rng));
    path_layout(c);
    c.greedy.resize(c.cand_row.size() + 1);
    for (auto& g : c.greedy) g = std::uniform_int_distribution<int32_t>(0, V - 1)(rng);
    paths.push_back(std::move(c));
  }
  return paths;
}

// The CPU's walk (core/decode/lookahead.cpp): the first longest matching
// chain, or the trie path of greedy tokens. `ties` counts equal-length chain matches.
std::vector<int32_t> path_walk(const PathCase& c, int32_t* ties) {
  auto greedy_after = [&](int32_t i) { return c.greedy[static_cast<size_t>(i < 0 ? 0 : c.cand_row[static_cast<size_t>(i)])]; };
  std::vector<int32_t> want;
  if (c.trie) {
    for (int32_t node = -1;;) {
      auto it = c.child.find({node, greedy_after(node)});
      if (it == c.child.end()) break;
      want.push_back(it->second);
      node = it->second;
    }
    return want;
  }
  for (const auto& ch : c.chains) {
    std::vector<int32_t> mm;
    int32_t g = greedy_after(-1);
    for (int32_t i : ch) {
      if (c.cand_token[static_cast<size_t>(i)] != g) break;
      mm.push_back(i);
      g = greedy_after(i);
    }
    if (mm.size() > want.size()) want = mm;
    else if (!mm.empty() && mm.size() == want.size()) ++*ties;
  }
  return want;
}

Matches paths_serial(const Paths& paths, int32_t) {
  Matches out;
  for (const PathCase& c : paths) {
    std::vector<int32_t> depth(c.cand_row.size() + 1), matched(c.cand_row.size() + 1);
    std::vector<int32_t> greedy = c.greedy;  // the serial match reads the greedy rows the block argmax wrote
    int32_t num = -1, err = -1;
    cuda::LookaheadVerifyArgs a;
    a.rows = static_cast<int32_t>(c.cand_row.size()) + 1;
    a.root_row = 0;
    a.cand_row = c.cand_row.data();
    a.cand_parent = c.cand_parent.data();
    a.cand_token = c.cand_token.data();
    a.num_cands = static_cast<int32_t>(c.cand_row.size());
    a.greedy = greedy.data();
    a.depth = depth.data();
    a.matched = matched.data();
    a.num_matched = &num;
    a.error = &err;
    cuda::lookahead_match_serial(a);
    REQUIRE(err == 0);
    out.emplace_back(matched.begin(), matched.begin() + num);
  }
  return out;
}

[[maybe_unused]] const bool path = twin_register(TwinSpec<Paths, Matches>{
    .name = "lookahead path equals the CPU's walk: first longest chain, or the trie path",
    .kernel = "cuda/lookahead_verify.cu",
    .tags = "[cuda][lookahead]",
    .host_variants = 4,
    .inputs = random_paths,
    .cpu =
        [](const Paths& paths) {
          Matches out;
          int32_t ties = 0;
          for (const PathCase& c : paths) out.push_back(path_walk(c, &ties));
          return out;
        },
    .host_twin = paths_serial,
    .compare =
        [](const TwinPoint&, const Paths& paths, const Matches& want, const Matches& got) {
          REQUIRE(got.size() == want.size());
          int32_t ties = 0;
          for (size_t rep = 0; rep < want.size(); ++rep) {
            CAPTURE(rep, paths[rep].trie, paths[rep].cands);
            REQUIRE(got[rep] == want[rep]);
            path_walk(paths[rep], &ties);
          }
          CHECK(ties > 0);  // equal-length chain matches happened: the tie rule was exercised
        },
});

// A verification pass: logits with NaNs (1%) and ties, candidates forming a
// random forest under row 0 whose tokens often follow the greedy token.
struct VerifyCase {
  Logits logits;
  std::vector<int32_t> cand_row, cand_parent, cand_token;
};
using Verifies = std::vector<VerifyCase>;
using VerifyOutputs = std::vector<LookaheadVerifyOutput>;

Verifies random_verifies(std::mt19937_64& rng, const TwinPoint& pt) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Verifies out;
  for (int rep = 0; rep < 30; ++rep) {
    VerifyCase v;
    Logits& lg = v.logits;
    lg.rows = std::uniform_int_distribution<int32_t>(1, 80)(rng);
    lg.vocab = std::uniform_int_distribution<int32_t>(1, pt.variant < 2 ? 600 : 40000)(rng);
    lg.data.resize(static_cast<size_t>(lg.rows) * static_cast<size_t>(lg.vocab));
    for (auto& x : lg.data) x = std::bernoulli_distribution(0.01)(rng) ? nan : static_cast<float>(std::uniform_int_distribution<int>(-40, 40)(rng)) / 8.0f;
    for (int32_t c = 0; c < lg.rows - 1; ++c) {
      v.cand_row.push_back(c + 1);
      v.cand_parent.push_back(std::uniform_int_distribution<int32_t>(-1, c - 1)(rng));
      const int32_t prow = v.cand_parent.back() < 0 ? 0 : v.cand_row[static_cast<size_t>(v.cand_parent.back())];
      v.cand_token.push_back(std::bernoulli_distribution(0.7)(rng) ? argmax_row(lg.row(prow), lg.vocab)
                                                                   : std::uniform_int_distribution<int32_t>(0, lg.vocab - 1)(rng));
    }
    out.push_back(std::move(v));
  }
  return out;
}

VerifyOutputs verifies_run(const Verifies& vs, cuda::VerifyExec exec) {
  auto verifier = cuda::make_lookahead_verifier(exec);
  VerifyOutputs out;
  for (const VerifyCase& v : vs) out.push_back(verifier->verify(v.logits, 0, v.cand_row, v.cand_parent, v.cand_token));
  return out;
}

[[maybe_unused]] const bool verify = twin_register(TwinSpec<Verifies, VerifyOutputs>{
    .name = "lookahead verification equals the host run and argmax_row",
    .kernel = "cuda/lookahead_verify.cu",
    .tags = "[cuda][lookahead]",
    .device_variants = 4,
    .inputs = random_verifies,
    .cpu = [](const Verifies& vs) { return verifies_run(vs, cuda::VerifyExec::host_twin); },
    .device = [](const Verifies& vs) { return verifies_run(vs, cuda::VerifyExec::device); },
    .compare =
        [](const TwinPoint&, const Verifies& vs, const VerifyOutputs& want, const VerifyOutputs& got) {
          REQUIRE(got.size() == want.size());
          for (size_t rep = 0; rep < want.size(); ++rep) {
            const Logits& lg = vs[rep].logits;
            CAPTURE(rep, lg.rows, lg.vocab);
            for (int32_t r = 0; r < lg.rows; ++r) REQUIRE(want[rep].greedy[static_cast<size_t>(r)] == argmax_row(lg.row(r), lg.vocab));
            REQUIRE(got[rep].greedy == want[rep].greedy);
            REQUIRE(got[rep].matched == want[rep].matched);
          }
        },
});

}  // namespace
}  // namespace triescope::testing
