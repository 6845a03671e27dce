// STATIC's whole constrained step (core/constraint/static_step.h) on fixed
// inputs shared with the authors' decoder (bench/static_peer_bench.py writes
// them and runs both): the paper's setting, batch 2 x beam 70, L = 8, d = 2,
// one thread. A plain timed program.
//
//   bench_static_step --set ids.npy --vocab 2048 --logits logits.f32 --prefixes prefixes.i32
//                     [--layout compact|stacked] [--reps 30] [--out result.json] [--serve]
//
// --serve: build the index, then decode once per "decode" line on stdin and
// answer each with one JSON line {"wall_s", "cpu_s", "tokens"}: the peer
// protocol's driver (bench/peer_protocol.py) interleaves these calls rep by
// rep with the authors' decoder in its own process.
//
// logits.f32: float32 [L x 140 x |V|]; at step t, beam j of query g reads row
// g * 70 + j of slice t. prefixes.i32: int32 [140 x L], ids of C.
// Measured (each over --reps repetitions; median, p10, p90, min, max):
//  * whole_step_us: a whole decode (static_decode) / L, wall and thread CPU;
//  * full_vocab_step_us: the same decode through the full-vocabulary path
//    (log_softmax_row of every row, the -inf mask, topk_candidates per
//    query, static_next_state), the step this replaces;
//  * constraint_us: the constraint's phases of the step (candidate lookup:
//    dense bit rows / CSR boundaries and slices; winners' next states), per
//    level on beams at the prefixes' states, mean over the L levels;
//    constraint_with_filter_us adds the dense levels' bit test, which runs
//    inside the normaliser's pass (dense_filter_us: the step's dense passes
//    minus the plain normaliser over the same rows; rank_us excludes it).
// The output also holds the decoded ids, for the comparison with the peer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/constraint/constraint_set.h"
#include "core/constraint/static_decode.h"
#include "core/constraint/static_step.h"
#include "core/constraint/vntk.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"

using namespace triescope;
using nlohmann::json;

namespace {

constexpr int32_t kGroups = 2, kBeams = 70, kRows = kGroups * kBeams;

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

json stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5)]; };
  return {{"median", q(0.5)}, {"p10", q(0.1)}, {"p90", q(0.9)}, {"min", v.front()}, {"max", v.back()}, {"n", v.size()}};
}

template <class T>
std::vector<T> read_array(const std::string& path, size_t count, const char* what) {
  const std::string bytes = file_read_all(path);
  TS_CHECK(bytes.size() == count * sizeof(T), path << ": " << what << " needs " << count * sizeof(T) << " bytes, the file holds " << bytes.size());
  std::vector<T> v(count);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// The step this replaces: full-vocabulary log-softmax, the -inf mask, the
// top k over every (beam, token), then the winners' next states; the same
// decode loop as static_decode. Returns the decoded ids [2 x 70 x L].
std::vector<int32_t> full_vocab_decode(const TransitionMatrix& tm, const float* logits) {
  const int32_t L = tm.length, V = tm.vocab_size;
  std::vector<int64_t> states(kRows, kDeadState);
  std::vector<double> scores(kRows, -std::numeric_limits<double>::infinity());
  std::vector<int32_t> tokens(static_cast<size_t>(kRows) * L, -1), next_tokens(tokens.size());
  for (int32_t g = 0; g < kGroups; ++g) states[static_cast<size_t>(g) * kBeams] = 0, scores[static_cast<size_t>(g) * kBeams] = 0.0;
  std::vector<double> lp;
  for (int32_t t = 0; t < L; ++t) {
    const int32_t m = t == 0 ? 1 : kBeams, n = kGroups * m;
    lp.assign(static_cast<size_t>(n) * V, 0.0);
    std::vector<int64_t> st(static_cast<size_t>(n));
    std::vector<double> sc(static_cast<size_t>(n));
    for (int32_t g = 0; g < kGroups; ++g)
      for (int32_t j = 0; j < m; ++j) {
        const size_t i = static_cast<size_t>(g) * m + static_cast<size_t>(j), b = static_cast<size_t>(g) * kBeams + static_cast<size_t>(j);
        st[i] = states[b];
        sc[i] = scores[b];
        log_softmax_row(logits + (static_cast<size_t>(t) * kRows + b) * V, V, lp.data() + i * V);
      }
    if (t < tm.dense_levels) dense_lookup(tm, st.data(), n, t, lp.data(), nullptr);
    else vntk_sparse<double>(tm, st.data(), n, t, lp.data(), nullptr, nullptr, nullptr);
    std::vector<int64_t> next_states(kRows, kDeadState);
    std::vector<double> next_scores(kRows, -std::numeric_limits<double>::infinity());
    std::fill(next_tokens.begin(), next_tokens.end(), -1);
    for (int32_t g = 0; g < kGroups; ++g) {
      const auto best = topk_candidates(lp.data() + static_cast<size_t>(g) * m * V, m, V, sc.data() + static_cast<size_t>(g) * m, kBeams, 1);  // one thread
      for (size_t j = 0; j < best.size(); ++j) {
        const int32_t row = static_cast<int32_t>(best[j].flat / V), tok = static_cast<int32_t>(best[j].flat % V);
        const size_t parent = static_cast<size_t>(g) * kBeams + static_cast<size_t>(row), b = static_cast<size_t>(g) * kBeams + j;
        std::copy(tokens.begin() + static_cast<std::ptrdiff_t>(parent) * L, tokens.begin() + static_cast<std::ptrdiff_t>(parent) * L + t,
                  next_tokens.begin() + static_cast<std::ptrdiff_t>(b) * L);
        next_tokens[b * L + static_cast<size_t>(t)] = tok;
        next_states[b] = static_next_state(tm, st[static_cast<size_t>(g) * m + static_cast<size_t>(row)], tok, t);
        next_scores[b] = best[j].score;
      }
    }
    states = next_states;
    scores = next_scores;
    tokens.swap(next_tokens);
  }
  return tokens;
}

int run(int argc, char** argv) {
  std::string set_path, logits_path, prefixes_path, layout = "compact", out_path;
  int32_t V = 2048, reps = 30, dense = 2;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      TS_CHECK(i + 1 < argc, "bench_static_step: " << a << " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("usage: bench_static_step --set ids.npy --vocab 2048 --logits logits.f32 --prefixes prefixes.i32\n"
                  "                         [--layout compact|stacked] [--dense 2] [--reps 30] [--out result.json] [--serve]\n");
      return 0;
    }
    if (a == "--set") set_path = val();
    else if (a == "--logits") logits_path = val();
    else if (a == "--prefixes") prefixes_path = val();
    else if (a == "--layout") layout = val();
    else if (a == "--out") out_path = val();
    else if (a == "--vocab") V = std::stoi(val());
    else if (a == "--reps") reps = std::stoi(val());
    else if (a == "--dense") dense = std::stoi(val());
    else if (a == "--serve") serve = true;
    else TS_FAIL("bench_static_step: unknown argument " << a);
  }
  TS_CHECK(!set_path.empty() && !logits_path.empty() && !prefixes_path.empty(), "bench_static_step: --set, --logits and --prefixes are required");
  TS_CHECK(reps >= 1, "bench_static_step: --reps must be >= 1");
  const ConstraintSet set = constraint_set_read(set_path, "npy", V);
  const int32_t L = set.length;
  double t0 = wall_now();
  const TransitionMatrix tm = TransitionMatrix::build(set, {dense, csr_layout_parse(layout, "--layout")});
  const double build_s = wall_now() - t0;
  const std::vector<float> logits = read_array<float>(logits_path, static_cast<size_t>(L) * kRows * V, "logits [L x 140 x |V|]");
  const std::vector<int32_t> prefixes = read_array<int32_t>(prefixes_path, static_cast<size_t>(kRows) * L, "prefixes [140 x L]");
  auto row_of = [&](int32_t t, int32_t g, int32_t j) { return logits.data() + (static_cast<size_t>(t) * kRows + static_cast<size_t>(g) * kBeams + static_cast<size_t>(j)) * V; };

  if (serve) {
    std::printf("{\"ready\": true, \"build_s\": %.6f}\n", build_s);
    std::fflush(stdout);
    for (std::string line; std::getline(std::cin, line);) {
      TS_CHECK(line == "decode", "bench_static_step --serve: expected \"decode\", got \"" << line << "\"");
      const double w0 = wall_now(), c0 = cpu_now();
      const StaticDecodeResult d = static_decode(tm, kGroups, kBeams, row_of);
      const double c1 = cpu_now(), w1 = wall_now();
      std::printf("%s\n", json({{"wall_s", w1 - w0}, {"cpu_s", c1 - c0}, {"tokens", d.tokens}}).dump().c_str());
      std::fflush(stdout);
    }
    return 0;
  }
  // Whole decodes (one warm-up).
  StaticDecodeResult dec = static_decode(tm, kGroups, kBeams, row_of);
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    const double w0 = wall_now(), c0 = cpu_now();
    dec = static_decode(tm, kGroups, kBeams, row_of);
    cpu.push_back((cpu_now() - c0) / L * 1e6);
    wall.push_back((wall_now() - w0) / L * 1e6);
  }
  // The full-vocabulary path, fewer repetitions (it is the slow one).
  const std::vector<int32_t> full_tokens = full_vocab_decode(tm, logits.data());
  std::vector<double> fwall, fcpu;
  for (int r = 0; r < std::max(3, reps / 5); ++r) {
    const double w0 = wall_now(), c0 = cpu_now();
    full_vocab_decode(tm, logits.data());
    fcpu.push_back((cpu_now() - c0) / L * 1e6);
    fwall.push_back((wall_now() - w0) / L * 1e6);
  }
  // The constraint's phases, per level, beams at the prefixes' states.
  std::vector<std::vector<int64_t>> states(static_cast<size_t>(L), std::vector<int64_t>(kRows));
  for (int32_t r = 0; r < kRows; ++r) {
    int64_t s = 0;
    for (int32_t t = 0; t < L; ++t) {
      states[static_cast<size_t>(t)][static_cast<size_t>(r)] = s;
      s = static_next_state(tm, s, prefixes[static_cast<size_t>(r) * L + static_cast<size_t>(t)], t);
    }
    TS_CHECK(s != kDeadState, prefixes_path << ": row " << r << " is not an id of the set");
  }
  StaticStep step(tm);
  StaticStepResult res;
  const std::vector<double> zero(kRows, 0.0);
  // At dense levels the bit row is tested inside the normaliser's pass, so
  // the step's timers count it as ranking. Its own cost: the step's dense
  // passes (timed one by one) minus the plain normaliser over the same rows
  // (dense_filter_us), added to the constraint's phases in
  // constraint_with_filter_us.
  std::vector<double> cons, rank, filter, cons_filter;
  for (int r = 0; r <= reps; ++r) {
    StaticStepTimes times;
    times.time_dense_passes = true;
    double plain = 0.0;
    int64_t plain_rows = 0;
    for (int32_t t = 0; t < L; ++t) {
      const float* lt = logits.data() + static_cast<size_t>(t) * kRows * V;
      step.run(lt, states[static_cast<size_t>(t)].data(), zero.data(), kRows, kGroups, kBeams, t, res, &times);
      if (t >= tm.dense_levels) continue;
      double sink = 0.0;
      const double w0 = wall_now();
      for (int32_t i = 0; i < kRows; ++i) sink += row_log_normaliser(lt + static_cast<size_t>(i) * V, V);
      plain += wall_now() - w0;
      plain_rows += kRows;
      if (sink == 42.0) std::printf(" ");
    }
    TS_CHECK(plain_rows == times.dense_passes, "bench_static_step: " << times.dense_passes << " dense passes for " << plain_rows << " rows");
    if (r == 0) continue;  // warm-up
    cons.push_back(times.constraint_s / L * 1e6);
    rank.push_back((times.rank_s - times.dense_pass_s + plain) / L * 1e6);
    filter.push_back((times.dense_pass_s - plain) / L * 1e6);
    cons_filter.push_back(cons.back() + filter.back());
  }
  json out = {{"items", set.size()},
              {"vocab", V},
              {"length", L},
              {"layout", layout},
              {"dense_levels", dense},
              {"build_s", build_s},
              {"index_MB", static_cast<double>(tm.memory().total()) / 1e6},
              {"normaliser_isa", log_normaliser_isa()},
              {"reps", reps},
              {"whole_step_us", stats(wall)},
              {"whole_step_cpu_us", stats(cpu)},
              {"full_vocab_step_us", stats(fwall)},
              {"full_vocab_step_cpu_us", stats(fcpu)},
              {"constraint_us", stats(cons)},
              {"dense_filter_us", stats(filter)},
              {"constraint_with_filter_us", stats(cons_filter)},
              {"rank_us", stats(rank)},
              {"tokens", dec.tokens},
              {"scores", dec.scores},
              {"live", dec.live},
              {"full_vocab_tokens_equal", full_tokens == dec.tokens}};
  if (!out_path.empty()) file_write_atomic(out_path, out.dump() + "\n");
  std::printf("|C| = %lld (%s, d = %d): whole step %.1f us (cpu %.1f), full-vocabulary step %.1f us (cpu %.1f), constraint %.1f us "
              "(%.1f with the dense bit test), ids equal to the full-vocabulary path: %s\n",
              static_cast<long long>(set.size()), layout.c_str(), dense, out["whole_step_us"]["median"].get<double>(),
              out["whole_step_cpu_us"]["median"].get<double>(), out["full_vocab_step_us"]["median"].get<double>(),
              out["full_vocab_step_cpu_us"]["median"].get<double>(), out["constraint_us"]["median"].get<double>(),
              out["constraint_with_filter_us"]["median"].get<double>(), full_tokens == dec.tokens ? "yes" : "NO");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
