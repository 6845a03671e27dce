#include <catch2/catch.hpp>

#include <cmath>

#include "core/decode/dsbd.h"
#include "core/decode/sampling.h"
#include "core/model/synthetic_model.h"
#include "core/select/log_normaliser.h"
#include "core/select/philox.h"
#include "stats_util.h"

using namespace triescope;

namespace {

std::vector<double> random_dist(uint64_t seed, uint32_t stream, size_t n, double zero_frac = 0.0) {
  const PhiloxKey key{seed};
  std::vector<double> p(n);
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double u = philox_uniform(key, stream, 0, 0, static_cast<uint32_t>(i), RandStream::target_sample);
    p[i] = (philox_uniform(key, stream, 1, 0, static_cast<uint32_t>(i), RandStream::target_sample) < zero_frac) ? 0.0 : -std::log(1.0 - u);
    s += p[i];
  }
  if (s == 0.0) p[0] = s = 1.0;
  for (double& x : p) x /= s;
  return p;
}

// p_beam and q_beam of one layer from a real synthetic target/draft pair:
// fixed input beams, small vocabulary (Eq. 1 over beams x vocabulary).
struct Layer {
  std::vector<double> p, q;
};
Layer synthetic_layer(int32_t vocab, int32_t perturb_q8, const SamplingConfig& warp = {}) {
  SyntheticConfig tc;
  tc.vocab_size = vocab;
  tc.seed = 77;
  tc.peakiness_q8 = 160;
  SyntheticConfig dc = tc;
  dc.perturb_seed = 991;
  dc.perturb_q8 = perturb_q8;
  SyntheticModel target(tc), draft(dc);
  // Two input beams: "prompt a" and "prompt b" (position 0, 1), read by both models through the same mask.
  StepInput in;
  in.tokens = {0, 1, 2};
  in.positions = {0, 1, 1};
  in.slots = {0, 1, 2};
  in.num_slots = 3;
  in.mask = BitMask(3, 3);
  in.mask.set(0, 0);
  in.mask.set(1, 0);
  in.mask.set(1, 1);
  in.mask.set(2, 0);
  in.mask.set(2, 2);
  Layer l;
  for (int which = 0; which < 2; ++which) {
    Model& m = which == 0 ? static_cast<Model&>(target) : static_cast<Model&>(draft);
    Logits out;
    m.forward(in, out);
    std::vector<double> tok(2 * static_cast<size_t>(vocab));
    log_softmax_row(out.row(1), vocab, tok.data());
    log_softmax_row(out.row(2), vocab, tok.data() + vocab);
    const std::vector<double> beam_lp = {std::log(0.7), std::log(0.3)};  // the input beams' likelihoods
    (which == 0 ? l.p : l.q) = beam_distribution(beam_lp, tok, vocab, warp);  // T o p_beam, T o q_beam
  }
  return l;
}

// One verification layer per seed, exactly as dsbd_decode draws it: W_S
// drafts iid from q_beam (draft stream), then Algorithm 1 over them.
std::vector<int64_t> run_layer(const Layer& l, int32_t ws, int32_t wl, AcceptRatio ratio, uint64_t seed, bool* passed = nullptr) {
  const PhiloxKey key{seed};
  std::vector<int64_t> drafts;
  for (int32_t i = 0; i < ws; ++i) drafts.push_back(sample_index(l.q, philox_uniform(key, 1, 1, 0, static_cast<uint32_t>(i), RandStream::draft_sample)));
  const LayerResult r = dsbd_verify_layer(l.p, l.q, drafts, wl, ratio, [&](RandStream s, uint32_t d) { return philox_uniform(key, 1, 1, 0, d, s); });
  if (passed) *passed = r.passed;
  return r.outputs;
}

// Chi-square of the output beams against iid p_beam: the joint of the first
// two outputs (independence and marginals at once) plus each output's marginal.
struct Fit {
  double joint_stat, joint_crit, marg_stat, marg_crit;
  bool ok() const { return joint_stat < joint_crit && marg_stat < marg_crit; }
};
Fit fit_to_p(const Layer& l, int32_t ws, int32_t wl, AcceptRatio ratio, int trials) {
  const size_t D = l.p.size();
  std::vector<int64_t> joint(D * D, 0);
  std::vector<std::vector<int64_t>> marg(static_cast<size_t>(wl), std::vector<int64_t>(D, 0));
  for (int t = 0; t < trials; ++t) {
    const auto out = run_layer(l, ws, wl, ratio, 1000 + static_cast<uint64_t>(t));
    REQUIRE(out.size() == static_cast<size_t>(wl));
    ++joint[static_cast<size_t>(out[0] * static_cast<int64_t>(D) + out[1])];
    for (int32_t k = 0; k < wl; ++k) ++marg[static_cast<size_t>(k)][static_cast<size_t>(out[static_cast<size_t>(k)])];
  }
  std::vector<double> pj(D * D);
  for (size_t a = 0; a < D; ++a)
    for (size_t b = 0; b < D; ++b) pj[a * D + b] = l.p[a] * l.p[b];
  const auto cj = test::chi_square(joint, pj);
  Fit f{cj.stat, test::chi_square_critical(cj.df), 0.0, 0.0};
  int32_t df = 0;
  for (auto& mc : marg) {
    const auto c = test::chi_square(mc, l.p);
    f.marg_stat += c.stat;
    df += c.df;
  }
  f.marg_crit = test::chi_square_critical(df);
  return f;
}

}  // namespace

TEST_CASE("Eq. 2-7: acceptance-count law and width against Monte Carlo", "[spec]") {
  const uint64_t seed = GENERATE(1ull, 2ull, 3ull, 4ull, 5ull, 6ull);
  const int32_t m = GENERATE(1, 3, 5);
  CAPTURE(seed, m);
  const size_t D = 6;
  const auto p = random_dist(seed, 1, D, 0.2), q = random_dist(seed, 2, D, 0.0);
  const auto alphas = dsbd_alphas(p, q, m, AcceptRatio::p_over_q);
  const auto P = dsbd_accept_count_probs(alphas, m);
  double total = 0.0;
  for (double x : P) total += x;
  CHECK(total == Approx(1.0).epsilon(1e-12));
  CHECK(alphas[0] == Approx([&] { double s = 0; for (size_t i = 0; i < D; ++i) s += std::min(p[i], q[i]); return s; }()));
  // Monte Carlo of the acceptance count with verification never stopping early.
  const int trials = 20000;
  std::vector<int64_t> counts(static_cast<size_t>(m) + 1, 0);
  for (int t = 0; t < trials; ++t) {
    const PhiloxKey key{static_cast<uint64_t>(t) + seed * 1000003ull};
    std::vector<int64_t> drafts;
    for (int32_t i = 0; i < m; ++i) drafts.push_back(sample_index(q, philox_uniform(key, 0, 0, 0, static_cast<uint32_t>(i), RandStream::draft_sample)));
    const LayerResult r = dsbd_verify_layer(p, q, drafts, m + 1, AcceptRatio::p_over_q,
                                            [&](RandStream s, uint32_t d) { return philox_uniform(key, 0, 0, 0, d, s); });
    int32_t acc = 0;
    for (auto& d : r.tested) acc += d.accepted;
    ++counts[static_cast<size_t>(acc)];
  }
  for (int32_t k = 0; k <= m; ++k) {
    CAPTURE(k, P[static_cast<size_t>(k)]);
    const double freq = static_cast<double>(counts[static_cast<size_t>(k)]) / trials;
    CHECK(std::abs(freq - P[static_cast<size_t>(k)]) < 4.5 * std::sqrt(P[static_cast<size_t>(k)] * (1 - P[static_cast<size_t>(k)]) / trials) + 1e-3);
  }
  // Eq. 7 on the Monte Carlo law, where no threshold sits within noise of a tail.
  for (double t : {0.5, 0.7, 0.9}) {
    int32_t k_mc = 0;
    bool near = false;
    for (int32_t k = 1; k <= m; ++k) {
      double tail = 0.0;
      for (int32_t j = k; j <= m; ++j) tail += static_cast<double>(counts[static_cast<size_t>(j)]) / trials;
      if (std::abs(tail - t) < 0.02) near = true;
      if (tail >= t) k_mc = k;
    }
    if (near) continue;
    double pal = 0.0;
    CAPTURE(t);
    CHECK(dsbd_width(p, q, m, t, 1, AcceptRatio::p_over_q, &pal) == std::max(1, k_mc));
    if (k_mc >= 1) CHECK(pal >= t);  // the returned tail probability is the one Eq. 7 compared
    CHECK(dsbd_width(p, q, m, t, m + 1, AcceptRatio::p_over_q) == m + 1);  // floored at W_min (Eq. 6)
  }
}

TEST_CASE("Eq. 4: equal p and q accept every draft, disjoint ones none", "[spec]") {
  const auto p = random_dist(9, 1, 8);
  for (double a : dsbd_alphas(p, p, 4, AcceptRatio::p_over_q)) CHECK(a == Approx(1.0));
  const std::vector<double> a1 = {0.5, 0.5, 0.0, 0.0}, b1 = {0.0, 0.0, 0.5, 0.5};
  for (double a : dsbd_alphas(a1, b1, 3, AcceptRatio::p_over_q)) CHECK(a == 0.0);
  CHECK(dsbd_width(p, p, 5, 0.9, 1, AcceptRatio::p_over_q) == 5);
}

TEST_CASE("Theorem 3.1: output beams of one layer are iid p_beam (chi-square over seeds)", "[spec]") {
  const int32_t ws = GENERATE(2, 4, 6);
  const int32_t warp_case = GENERATE(0, 1);  // 0: no warp; 1: temperature 0.8 and top-k 6 over the 8 pairs
  const int32_t wl = 2;
  CAPTURE(ws, wl, warp_case);
  SamplingConfig warp;
  if (warp_case == 1) {
    warp.temperature = 0.8;
    warp.top_k = 6;
  }
  const Layer l = synthetic_layer(4, 256, warp);  // 2 beams x 4 tokens, a strongly perturbed draft
  double tv = 0.0;
  for (size_t i = 0; i < l.p.size(); ++i) tv += 0.5 * std::abs(l.p[i] - l.q[i]);
  CAPTURE(tv);
  REQUIRE(tv > 0.15);  // p and q must really differ for the test to mean anything
  const Fit f = fit_to_p(l, ws, wl, AcceptRatio::p_over_q, 12000);
  CAPTURE(f.joint_stat, f.joint_crit, f.marg_stat, f.marg_crit);
  CHECK(f.ok());
}

TEST_CASE("Theorem 3.1 negative control: the ratio as printed (q/p) fails the same test", "[spec]") {
  const int32_t ws = GENERATE(2, 4, 6);
  CAPTURE(ws);
  const Layer l = synthetic_layer(4, 256);
  const Fit f = fit_to_p(l, ws, 2, AcceptRatio::q_over_p, 12000);
  CAPTURE(f.joint_stat, f.joint_crit, f.marg_stat, f.marg_crit);
  CHECK_FALSE(f.ok());
}

TEST_CASE("Algorithm 1 bookkeeping: stop at W_L accepted, fill a short layer from p' then p_beam", "[spec]") {
  const Layer l = synthetic_layer(4, 256);
  for (uint64_t seed = 0; seed < 300; ++seed) {
    CAPTURE(seed);
    const PhiloxKey key{seed};
    std::vector<int64_t> drafts;
    for (uint32_t i = 0; i < 5; ++i) drafts.push_back(sample_index(l.q, philox_uniform(key, 1, 1, 0, i, RandStream::draft_sample)));
    const int32_t wl = 1 + static_cast<int32_t>(seed % 4);
    const LayerResult r = dsbd_verify_layer(l.p, l.q, drafts, wl, AcceptRatio::p_over_q, [&](RandStream s, uint32_t d) { return philox_uniform(key, 1, 1, 0, d, s); });
    int32_t acc = 0;
    for (auto& d : r.tested) {
      CHECK(d.pair == drafts[static_cast<size_t>(d.draft)]);
      acc += d.accepted;
    }
    REQUIRE(r.outputs.size() == static_cast<size_t>(wl));
    CHECK(r.passed == (acc == wl));
    if (r.passed) CHECK(r.tested.back().accepted);  // no draft is tested after the W_L-th acceptance
    else CHECK(r.tested.size() == drafts.size());
  }
}
