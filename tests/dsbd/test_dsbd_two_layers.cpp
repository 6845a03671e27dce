#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "core/decode/dsbd.h"
#include "core/model/synthetic_model.h"
#include "core/select/log_normaliser.h"
#include "stats_util.h"

using namespace triescope;

namespace {

SyntheticConfig small_target() {
  SyntheticConfig c;
  c.vocab_size = 3;
  c.seed = 5;
  c.peakiness_q8 = 200;
  return c;
}

// log p(. | path) from a fresh model scoring the path alone.
std::vector<double> next_logprobs(const SyntheticConfig& cfg, const std::vector<int32_t>& path) {
  SyntheticModel m(cfg);
  StepInput in;
  const auto n = static_cast<int32_t>(path.size());
  in.num_slots = n;
  in.mask = BitMask(n, n);
  for (int32_t i = 0; i < n; ++i) {
    in.tokens.push_back(path[static_cast<size_t>(i)]);
    in.positions.push_back(i);
    in.slots.push_back(i);
    for (int32_t j = 0; j <= i; ++j) in.mask.set(i, j);
  }
  Logits out;
  m.forward(in, out);
  std::vector<double> lp(static_cast<size_t>(out.vocab));
  log_softmax_row(out.row(n - 1), out.vocab, lp.data());
  return lp;
}

}  // namespace

// The second draft layer is verified against q_beam restricted to the
// accepted parents and renormalised (docs/dsbd.md): given the layer-1 output
// set A, the layer-2 outputs must be iid p_beam over A x V, whatever happened
// at layer 1. Checked on the most frequent A over many seeds.
TEST_CASE("dsbd: given the accepted layer 1, layer-2 outputs are iid p_beam (chi-square over seeds)", "[spec]") {
  // Negative control (renormalize = false): q_beam as drawn over all parents must fail.
  const bool renormalize = GENERATE(true, false);
  CAPTURE(renormalize);
  const SyntheticConfig tc = small_target();
  SyntheticConfig dc = tc;
  dc.perturb_seed = 3;
  dc.perturb_q8 = 200;
  SyntheticModel target(tc), draft(dc);
  const std::vector<int32_t> prompt = {1, 2};
  DsbdConfig cfg;
  cfg.draft_width = 4;
  cfg.gamma = 2;
  cfg.dynamic = false;
  cfg.width = 2;
  cfg.max_new_tokens = 3;  // one iteration drafting two layers
  cfg.renormalize_q = renormalize;
  // key: the layer-1 output multiset (sorted tokens) -> counts of (o1, o2) as token pairs (t1 * V + t2)
  std::map<std::pair<int32_t, int32_t>, std::map<std::pair<int32_t, int32_t>, int64_t>> hist;
  const int runs = 6000;
  for (int s = 0; s < runs; ++s) {
    cfg.sampling.seed = 500 + static_cast<uint64_t>(s);
    MemoryTraceSink sink;
    dsbd_decode(target, draft, prompt, cfg, &sink);
    for (const auto& rec : sink.records) {
      if (rec.value("phase", "") != "verify") continue;
      const auto& layers = rec["verify"]["layers"];
      if (layers.size() < 2 || !layers[0]["passed"].get<bool>()) break;
      std::vector<int32_t> a;
      for (const auto& d : layers[0]["drafts"])
        if (d["accepted"].get<bool>()) a.push_back(d["node"].get<int32_t>());
      // Output of layer 2: its accepted drafts if it passed, else the chosen beams.
      std::vector<int32_t> out;
      if (layers[1]["passed"].get<bool>()) {
        for (const auto& d : layers[1]["drafts"])
          if (d["accepted"].get<bool>()) out.push_back(d["node"].get<int32_t>());
      } else {
        for (const auto& c : rec["chosen"]) out.push_back(c["node"].get<int32_t>());
      }
      REQUIRE(out.size() == 2u);
      // Node -> tokens via the trace's added records.
      std::map<int32_t, std::pair<int32_t, int32_t>> node_tok;  // node -> (parent, token)
      for (const auto& r2 : sink.records)
        if (r2.contains("added"))
          for (const auto& nd : r2["added"]) node_tok[nd["id"].get<int32_t>()] = {nd["parent"].get<int32_t>(), nd["token"].get<int32_t>()};
      std::pair<int32_t, int32_t> key = {node_tok.at(a[0]).second, node_tok.at(a[1]).second};
      if (key.first > key.second) std::swap(key.first, key.second);
      auto seq = [&](int32_t node) { return node_tok.at(node_tok.at(node).first).second * tc.vocab_size + node_tok.at(node).second; };
      ++hist[key][{seq(out[0]), seq(out[1])}];
      break;
    }
  }
  // The most frequent layer-1 set.
  auto best = hist.begin();
  int64_t best_n = 0;
  for (auto it = hist.begin(); it != hist.end(); ++it) {
    int64_t n = 0;
    for (auto& [k, c] : it->second) n += c;
    if (n > best_n) {
      best_n = n;
      best = it;
    }
  }
  CAPTURE(best->first.first, best->first.second, best_n);
  REQUIRE(best_n > 1000);
  // p_beam over A x V as a law over depth-2 sequences t1 * V + t2 (Eq. 1).
  const int32_t V = tc.vocab_size;
  const std::vector<int32_t> A = {best->first.first, best->first.second};
  const auto lp0 = next_logprobs(tc, prompt);
  std::vector<double> law(static_cast<size_t>(V * V), 0.0);
  double Z = 0.0;
  for (int32_t a : A) {
    std::vector<int32_t> path = prompt;
    path.push_back(a);
    const auto lp1 = next_logprobs(tc, path);
    for (int32_t x = 0; x < V; ++x) {
      const double w = std::exp(lp0[static_cast<size_t>(a)] + lp1[static_cast<size_t>(x)]);
      law[static_cast<size_t>(a * V + x)] += w;
      Z += w;
    }
  }
  for (double& w : law) w /= Z;
  std::vector<int64_t> obs(law.size() * law.size(), 0);
  std::vector<double> expected(obs.size());
  for (auto& [k, c] : best->second) obs[static_cast<size_t>(k.first) * law.size() + static_cast<size_t>(k.second)] += c;
  for (size_t i = 0; i < law.size(); ++i)
    for (size_t j = 0; j < law.size(); ++j) expected[i * law.size() + j] = law[i] * law[j];
  const auto c = test::chi_square(obs, expected);
  CAPTURE(c.stat, c.df, test::chi_square_critical(c.df));
  if (renormalize) CHECK(c.stat < test::chi_square_critical(c.df));
  else CHECK(c.stat > test::chi_square_critical(c.df));
}
