// DSBD efficiency vs quality on the synthetic target/draft pair (docs/benchmarks-dsbd.md).
// A plain timed program: every configuration decodes the same prompts with the
// same seeds; it prints one CSV row per configuration and writes the points and
// the Pareto fronts (the paper's Figures 4-5) to --out.
//
//   bench_dsbd [--prompts 16] [--seeds 2] [--max-new 64] [--vocab 128] [--perturb 0.15]
//              [--peakiness 0.75] [--out docs/results]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/decode/dsbd.h"
#include "core/decode/sampling.h"
#include "core/decode/speculative.h"
#include "core/model/synthetic_model.h"
#include "core/select/philox.h"
#include "core/trace/trace.h"

using namespace triescope;

namespace {

struct Point {
  std::string method, params;
  double passes_per_step = 0, draft_per_step = 0, loglik_per_token = 0, tokens_per_s = 0;
  double target_queries = 0, draft_queries = 0;  // per output step: what CPU time pays for
  double layer_accept[3] = {-1, -1, -1};
  double mean_width = 0, steps_per_iter = 0;
  int64_t shared_peak = 0, paper_peak = 0;  // this layout (trie / shared trie) vs the baseline's (batch copies / one cache per input beam)
};

std::string fmt(double x, int prec = 4) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << x;
  return os.str();
}

std::string csv_row(const Point& p) {
  std::ostringstream os;
  os << p.method << ',' << '"' << p.params << '"' << ',' << fmt(p.passes_per_step) << ',' << fmt(p.draft_per_step) << ','
     << fmt(p.loglik_per_token) << ',' << fmt(p.tokens_per_s, 1) << ',' << fmt(p.target_queries, 2) << ','
     << fmt(p.draft_queries, 2) << ',';
  for (double a : p.layer_accept) os << (a < 0 ? std::string() : fmt(a, 3)) << ',';
  os << fmt(p.mean_width, 2) << ',' << fmt(p.steps_per_iter, 3) << ',' << p.shared_peak << ',' << p.paper_peak;
  return os.str();
}
const char* kHeader =
    "method,params,target_passes_per_step,draft_passes_per_step,loglik_per_token,tokens_per_s,target_queries_per_step,draft_queries_per_step,accept_l1,accept_l2,accept_l3,"
    "mean_width,steps_per_iteration,peak_kv_slots_trie,peak_kv_slots_baseline_layout";

// Pareto front: no other point is both cheaper (fewer target passes) and better.
std::vector<Point> pareto(std::vector<Point> pts) {
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
    return a.passes_per_step < b.passes_per_step || (a.passes_per_step == b.passes_per_step && a.loglik_per_token > b.loglik_per_token);
  });
  std::vector<Point> front;
  double best = -1e300;
  for (const Point& p : pts)
    if (p.loglik_per_token > best) {
      front.push_back(p);
      best = p.loglik_per_token;
    }
  return front;
}

}  // namespace

int main(int argc, char** argv) {
  int prompts = 16, seeds = 2, max_new = 64, vocab = 128;
  double perturb = 0.15, peakiness = 0.75;
  std::string out = "docs/results";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << "usage: bench_dsbd [--prompts 16] [--seeds 2] [--max-new 64] [--vocab 128] [--perturb 0.15] [--peakiness 0.75] "
                   "[--out docs/results]\n";
      return 0;
    }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--prompts") prompts = std::stoi(v);
    else if (k == "--seeds") seeds = std::stoi(v);
    else if (k == "--max-new") max_new = std::stoi(v);
    else if (k == "--vocab") vocab = std::stoi(v);
    else if (k == "--perturb") perturb = std::stod(v);
    else if (k == "--peakiness") peakiness = std::stod(v);
    else if (k == "--out") out = v;
    else {
      std::cerr << "bench_dsbd: unknown option " << k << "\n";
      return 2;
    }
  }
  try {
    SyntheticConfig tc;
    tc.vocab_size = vocab;
    tc.seed = 404;
    tc.peakiness_q8 = static_cast<int32_t>(peakiness * 256);
    tc.nominal_shape = {32, 8, 128, 2};
    SyntheticConfig dc = tc;
    dc.perturb_seed = 17;
    dc.perturb_q8 = static_cast<int32_t>(perturb * 256);
    SyntheticModel target(tc), draft(dc);
    std::vector<std::vector<int32_t>> prompt_set;
    const PhiloxKey pk{2024};
    for (int p = 0; p < prompts; ++p) {
      std::vector<int32_t> pr;
      for (int i = 0; i < 16; ++i)
        pr.push_back(static_cast<int32_t>(philox_uniform(pk, static_cast<uint32_t>(p), 0, 0, static_cast<uint32_t>(i), RandStream::target_sample) * vocab));
      prompt_set.push_back(pr);
    }
    const double runs = static_cast<double>(prompts) * seeds;
    const double steps_total = runs * max_new;
    std::vector<Point> points;
    double tq = 0, dq = 0;  // queries fed, summed by the loops below and reset by finish()
    auto finish = [&](Point p, double target_calls, double draft_calls, double ll, double secs) {
      p.target_queries = tq / steps_total;
      p.draft_queries = dq / steps_total;
      tq = dq = 0;
      p.passes_per_step = target_calls / steps_total;
      p.draft_per_step = draft_calls / steps_total;
      p.loglik_per_token = ll / steps_total;
      p.tokens_per_s = steps_total / secs;
      std::cout << csv_row(p) << std::endl;
      points.push_back(p);
    };
    std::cout << kHeader << std::endl;
    // Beam sampling W = 1..4 (W = 1 is multinomial sampling).
    for (int W = 1; W <= 4; ++W) {
      Point p{"beam_sampling", "W=" + std::to_string(W)};
      double tc_ = 0, ll = 0, secs = 0;
      for (int pi = 0; pi < prompts; ++pi)
        for (int s = 0; s < seeds; ++s) {
          BeamConfig cfg;
          cfg.num_beams = W;
          cfg.max_new_tokens = max_new;
          cfg.gc_interval = 8;
          SamplingConfig sc;
          sc.seed = static_cast<uint64_t>(s + 1);
          const auto r = beam_sampling(target, prompt_set[static_cast<size_t>(pi)], cfg, sc);
          tq += static_cast<double>(r.sampling.target_tokens);
          tc_ += static_cast<double>(r.sampling.target_calls);
          ll += r.sampling.log_likelihood;
          secs += r.decode.metrics.seconds;
          p.shared_peak = std::max<int64_t>(p.shared_peak, r.decode.metrics.peak_slots);
          p.paper_peak = std::max<int64_t>(p.paper_peak, r.decode.metrics.batch_peak_slots);
        }
      finish(p, tc_, 0, ll, secs);
    }
    // Speculative decoding, gamma in {2, 3}.
    for (int gamma : {2, 3}) {
      Point p{"speculative", "gamma=" + std::to_string(gamma)};
      double tc_ = 0, dc_ = 0, ll = 0, secs = 0, acc = 0, ver = 0;
      for (int pi = 0; pi < prompts; ++pi)
        for (int s = 0; s < seeds; ++s) {
          SpeculativeConfig c;
          c.gamma = gamma;
          c.max_new_tokens = max_new;
          c.sampling.seed = static_cast<uint64_t>(s + 1);
          const auto r = speculative_decode(target, draft, prompt_set[static_cast<size_t>(pi)], c);
          tq += static_cast<double>(r.sampling.target_tokens);
          dq += static_cast<double>(r.sampling.draft_tokens);
          tc_ += static_cast<double>(r.sampling.target_calls);
          dc_ += static_cast<double>(r.sampling.draft_calls);
          ll += r.sampling.log_likelihood;
          secs += r.decode.metrics.seconds;
          acc += static_cast<double>(r.sampling.layers_accepted);
          ver += static_cast<double>(r.sampling.layers_verified);
          p.shared_peak = std::max<int64_t>(p.shared_peak, r.decode.metrics.peak_slots);
          p.paper_peak = p.shared_peak;  // one sequence: both layouts hold prompt + path + drafts
        }
      p.layer_accept[0] = acc / ver;  // per-token acceptance
      finish(p, tc_, dc_, ll, secs);
    }
    // DSBD grid of the paper (Section 4.2), plus the memory-constrained mode (Section 3.4).
    for (int mc = 0; mc <= 1; ++mc)
      for (int gamma : {2, 3})
        for (int ws = 2; ws <= 6; ++ws)
          for (double t : {0.7, 0.9})
            for (int wmin = 1; wmin <= 3; ++wmin) {
              if (wmin > ws) continue;
              std::ostringstream ps;
              ps << "W_S=" << ws << " gamma=" << gamma << " t=" << t << " W_min=" << wmin;
              Point p{mc ? "dsbd_memory_constrained" : "dsbd", ps.str()};
              double tc_ = 0, dc_ = 0, ll = 0, secs = 0, wsum = 0, ver = 0, full = 0, fsteps = 0;
              std::vector<double> la(3, 0), lv(3, 0);
              for (int pi = 0; pi < prompts; ++pi)
                for (int s = 0; s < seeds; ++s) {
                  DsbdConfig c;
                  c.draft_width = ws;
                  c.gamma = gamma;
                  c.dynamic = true;
                  c.threshold = t;
                  c.min_width = wmin;
                  c.memory_constrained = mc != 0;
                  c.max_new_tokens = max_new;
                  c.sampling.seed = static_cast<uint64_t>(s + 1);
                  const auto r = dsbd_decode(target, draft, prompt_set[static_cast<size_t>(pi)], c);
                  tq += static_cast<double>(r.out.sampling.target_tokens);
                  dq += static_cast<double>(r.out.sampling.draft_tokens);
                  tc_ += static_cast<double>(r.out.sampling.target_calls);
                  dc_ += static_cast<double>(r.out.sampling.draft_calls);
                  ll += r.out.sampling.log_likelihood;
                  secs += r.out.decode.metrics.seconds;
                  wsum += static_cast<double>(r.stats.width_sum);
                  for (size_t l = 0; l < r.stats.layer_verified.size(); ++l) {
                    la[l] += static_cast<double>(r.stats.layer_accepted[l]);
                    lv[l] += static_cast<double>(r.stats.layer_verified[l]);
                    ver += static_cast<double>(r.stats.layer_verified[l]);
                  }
                  full += static_cast<double>(r.stats.full_iterations);
                  fsteps += static_cast<double>(r.stats.steps_in_full_iterations);
                  p.shared_peak = std::max<int64_t>(p.shared_peak, r.stats.shared_peak_slots);
                  p.paper_peak = std::max<int64_t>(p.paper_peak, r.stats.paper_peak_slots);
                }
              for (int l = 0; l < gamma; ++l) p.layer_accept[l] = lv[static_cast<size_t>(l)] > 0 ? la[static_cast<size_t>(l)] / lv[static_cast<size_t>(l)] : -1;
              p.mean_width = ver > 0 ? wsum / ver : 0;
              p.steps_per_iter = full > 0 ? fsteps / full : 0;
              finish(p, tc_, dc_, ll, secs);
            }
    // Outputs: all points, the two Pareto fronts, and the speed-up at equal quality.
    std::filesystem::create_directories(out);
    std::string all = std::string(kHeader) + "\n";
    for (const Point& p : points) all += csv_row(p) + "\n";
    file_write_atomic(out + "/dsbd_points.csv", all);
    std::vector<Point> bs, ds, dm;
    for (const Point& p : points) {
      if (p.method == "beam_sampling") bs.push_back(p);
      if (p.method == "dsbd") ds.push_back(p);
      if (p.method == "dsbd_memory_constrained") dm.push_back(p);
    }
    // Beam sampling spends one target pass per step at every W: its "curve"
    // (the paper's yellow line) is all four points; DSBD's are Pareto fronts.
    const auto fd = pareto(ds), fm = pareto(dm);
    std::string fr = std::string("front,") + kHeader + "\n";
    for (const Point& p : bs) fr += "beam_sampling," + csv_row(p) + "\n";
    for (const Point& p : fd) fr += "dsbd," + csv_row(p) + "\n";
    for (const Point& p : fm) fr += "dsbd_memory_constrained," + csv_row(p) + "\n";
    file_write_atomic(out + "/dsbd_pareto.csv", fr);
    // Modeled cost: target passes + c x draft passes, c = 0.1 (a draft ~10x cheaper per pass than the target;
    // the synthetic pair's measured wall clock has c = 1, the two models cost the same).
    std::string su = "variant,beam_sampling,bs_loglik_per_token,bs_passes_per_step,dsbd_params,dsbd_loglik_per_token,dsbd_passes_per_step,speedup_target_passes,speedup_modeled_c0.1,speedup_wallclock_synthetic\n";
    std::cout << "\nspeed-up of DSBD over beam sampling at equal or better quality (cheapest DSBD point on the front):\n";
    for (const auto* front : {&fd, &fm})
      for (const Point& b : bs) {
        const Point* best = nullptr;
        for (const Point& d : *front)
          if (d.loglik_per_token >= b.loglik_per_token && (!best || d.passes_per_step < best->passes_per_step)) best = &d;
        std::ostringstream row;
        row << (front == &fd ? "dsbd" : "dsbd_memory_constrained") << ',' << b.params << ',' << fmt(b.loglik_per_token) << ','
            << fmt(b.passes_per_step) << ',';
        if (best)
          row << '"' << best->params << "\"," << fmt(best->loglik_per_token) << ',' << fmt(best->passes_per_step) << ','
              << fmt(b.passes_per_step / best->passes_per_step, 3) << ','
              << fmt(b.passes_per_step / (best->passes_per_step + 0.1 * best->draft_per_step), 3) << ','
              << fmt(best->tokens_per_s / b.tokens_per_s, 3);
        else
          row << "none reaches this quality,,,,,";
        su += row.str() + "\n";
        std::cout << "  " << row.str() << "\n";
      }
    file_write_atomic(out + "/dsbd_speedup.csv", su);
    std::cout << "wrote " << out << "/dsbd_points.csv, dsbd_pareto.csv, dsbd_speedup.csv\n";
  } catch (const Error& e) {
    std::cerr << "bench_dsbd: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
