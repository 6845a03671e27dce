// Trie vs batch beam search with their forward passes inside llama.cpp (the
// "llama_cpp" model, llama-cpp-python 0.3.36) on the SmolLM2-135M-Instruct
// GGUF and its chat prompt (docs/benchmarks.md, "Inside llama.cpp: trie vs
// batch beam search"). Per beam width:
//  - one checked decode of each (every step's cells read back from the engine
//    and checked against the mask rows): the hypotheses and scores asserted
//    equal, the engine's occupied cells per step printed with their peak and mean;
//  - tokens/s by the peer protocol (bench/peer_protocol.py, done here in C++):
//    the cell read-back off, both sides on one model and thread count,
//    interleaved rep by rep with the order rotating, warm-up reps first,
//    >= 3 runs with the load average printed before each, every output asserted
//    equal (exit 1 on a mismatch), wall and process CPU time per call;
//    tokens/s = b x steps / seconds, the median of the run medians with its
//    [min .. max] over runs, the ratio as its range over runs.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/parallel_rows.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/llama_cpp/llama_cpp_model.h"
#include "core/trace/trace.h"

using namespace triescope;

namespace {

using Options = std::map<std::string, std::string>;

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: %s [--option value ...]; options and their defaults:\n", argv[0]);
      for (const auto& [k, v] : o) std::printf("  --%s %s\n", k.c_str(), v.empty() ? "\"\"" : v.c_str());
      std::exit(0);
    }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "bench_llama_cpp: option %s needs a value\n", argv[argc - 1]);
    return false;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !o.count(k.substr(2))) {
      std::fprintf(stderr, "bench_llama_cpp: unknown option %s\n", k.c_str());
      return false;
    }
    o[k.substr(2)] = argv[i + 1];
  }
  return true;
}

std::vector<int32_t> int_list(const std::string& s) {
  std::vector<int32_t> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(std::stoi(t));
  return v;
}

// The chat prompt of samples/smollm2_trie_beam.json ("What is the capital of France?").
const std::vector<int32_t> kChatPrompt = {1,    9690, 198,  2683, 359, 253,  5356,  5646, 11173, 3365, 3511, 308, 34519,
                                          28,   7018, 411,  407,  19712, 8182, 2,   198,  1,     4093, 198,  1780, 314,
                                          260,  3575, 282,  4649, 47,   2,    198, 1,    520,   9531, 198};

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string load_average() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return "load average unknown";
  char buf[96];
  std::snprintf(buf, sizeof buf, "load average %.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Spread {
  double med = 0, lo = 0, hi = 0;
};
Spread spread(const std::vector<double>& per_run) {
  return {median(per_run), *std::min_element(per_run.begin(), per_run.end()), *std::max_element(per_run.begin(), per_run.end())};
}

bool same_outputs(const DecodeResult& a, const DecodeResult& b) {
  if (a.hypotheses.size() != b.hypotheses.size() || a.metrics.steps != b.metrics.steps) return false;
  for (size_t h = 0; h < a.hypotheses.size(); ++h)
    if (a.hypotheses[h].tokens != b.hypotheses[h].tokens || a.hypotheses[h].score != b.hypotheses[h].score ||
        a.hypotheses[h].sum_logprobs != b.hypotheses[h].sum_logprobs)
      return false;
  return true;
}

void print_hypotheses(const char* name, const DecodeResult& r) {
  std::fprintf(stderr, "  %s:\n", name);
  for (const Hypothesis& h : r.hypotheses) {
    std::fprintf(stderr, "    %.17g %.17g :", h.score, h.sum_logprobs);
    for (int32_t t : h.tokens) std::fprintf(stderr, " %d", t);
    std::fprintf(stderr, "\n");
  }
}

// The engine's occupied cells after each step, from the trace's kv.engine_cells.
std::vector<int64_t> engine_cells(const MemoryTraceSink& t) {
  std::vector<int64_t> v;
  for (const json& r : t.records)
    if (r.value("kind", "") == "step") v.push_back(r.at("kv").at("engine_cells").get<int64_t>());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = {{"model", ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"},
               {"beams", "3,9,15"},
               {"max-new", "32"},
               {"gc", "8"},
               {"threads", "1"},
               {"n-ctx", "2048"},
               {"n-ubatch", "32"},
               {"runs", "3"},
               {"reps", "3"},
               {"warmup", "1"},
               {"prompt-text", ""}};
  if (!parse_options(argc, argv, o)) return 2;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines as they come, into a file too
  const int32_t runs = std::stoi(o["runs"]), reps = std::stoi(o["reps"]), warmup = std::stoi(o["warmup"]);
  if (runs < 3 || reps < 1 || warmup < 0) {
    std::fprintf(stderr, "bench_llama_cpp: --runs must be >= 3, --reps >= 1, --warmup >= 0\n");
    return 2;
  }
  try {
    LlamaCppOptions mo;
    mo.path = o["model"];
    mo.threads = std::stoi(o["threads"]);
    mo.n_ctx = std::stoi(o["n-ctx"]);
    mo.n_ubatch = std::stoi(o["n-ubatch"]);
    LlamaCppModel model(mo);
    const std::vector<int32_t> prompt = o["prompt-text"].empty() ? kChatPrompt : model.tokenize(o["prompt-text"]);
    const json d = model.describe();
    std::printf("bench_llama_cpp: %s\n  engine: %s\n  %s\n", mo.path.c_str(), d["engine_version"].get<std::string>().c_str(),
                d["engine_system_info"].get<std::string>().c_str());
    std::printf("  prompt %zu tokens, max_new_tokens %s, trie gc_interval %s, n_ctx %d, n_ubatch %d, flash attention on, KV f16\n",
                prompt.size(), o["max-new"].c_str(), o["gc"].c_str(), d["n_ctx"].get<int>(), d["n_ubatch"].get<int>());
    std::printf("  threads: trie %d ggml + %d host (TRIESCOPE_HOST_THREADS), batch %d ggml + %d host (one model, one context)\n",
                model.threads(), parallel_rows_threads(), model.threads(), parallel_rows_threads());
    std::printf("  protocol: %d warm-up rep(s), %d runs x %d reps, interleaved, order rotating; checked runs read the cells back, timed runs do not\n\n",
                warmup, runs, reps);

    struct Row {
      int32_t b, steps;
      int64_t trie_peak, batch_peak;
      double trie_mean, batch_mean;
      Spread trie_tps, batch_tps, ratio, trie_cpu, batch_cpu;
    };
    std::vector<Row> rows;
    for (const int32_t b : int_list(o["beams"])) {
      BeamConfig c;
      c.num_beams = b;
      c.max_new_tokens = std::stoi(o["max-new"]);
      c.eos_token = 2;
      c.length_penalty = 1.0;
      c.early_stopping = EarlyStopping::yes;
      c.gc_interval = std::stoi(o["gc"]);

      // The checked decodes: cells read back and checked every step.
      model.set_check_cells(true);
      MemoryTraceSink tt, bt;
      const auto t0 = std::chrono::steady_clock::now();
      const DecodeResult ref_trie = trie_beam_search(model, prompt, c, &tt);
      const auto t1 = std::chrono::steady_clock::now();
      const DecodeResult ref_batch = batch_beam_search(model, prompt, c, &bt);
      const auto t2 = std::chrono::steady_clock::now();
      if (!same_outputs(ref_trie, ref_batch)) {
        std::fprintf(stderr, "MISMATCH: b = %d: trie and batch beam search differ\n", b);
        print_hypotheses("trie", ref_trie);
        print_hypotheses("batch", ref_batch);
        return 1;
      }
      const std::vector<int64_t> tc = engine_cells(tt), bc = engine_cells(bt);
      auto mean = [](const std::vector<int64_t>& v) {
        double s = 0;
        for (int64_t x : v) s += static_cast<double>(x);
        return s / static_cast<double>(v.size());
      };
      Row row{b, ref_trie.metrics.steps, *std::max_element(tc.begin(), tc.end()), *std::max_element(bc.begin(), bc.end()), mean(tc), mean(bc),
              {}, {}, {}, {}, {}};
      std::printf("b = %d: %d steps, hypotheses and scores bit-equal (best %.6f: %zu tokens); checked decodes %.2f s trie, %.2f s batch\n", b,
                  row.steps, ref_trie.hypotheses.front().score, ref_trie.hypotheses.front().tokens.size(),
                  std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
      for (const auto& [name, v] : {std::pair<const char*, const std::vector<int64_t>&>{"trie ", tc}, {"batch", bc}}) {
        std::printf("  engine cells per step, %s:", name);
        for (int64_t x : v) std::printf(" %lld", static_cast<long long>(x));
        std::printf("\n");
      }

      // The timed decodes, by the peer protocol.
      model.set_check_cells(false);
      struct Side {
        const char* name;
        bool trie;
        std::vector<std::vector<double>> wall, cpu;
      };
      std::vector<Side> sides = {{"trie", true, {}, {}}, {"batch", false, {}, {}}};
      auto call = [&](Side& s, const char* where) {
        const double w0 = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(), c0 = process_cpu_seconds();
        const DecodeResult r = s.trie ? trie_beam_search(model, prompt, c) : batch_beam_search(model, prompt, c);
        const double w1 = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(), c1 = process_cpu_seconds();
        if (!same_outputs(r, ref_trie)) {
          std::fprintf(stderr, "MISMATCH: b = %d, %s: %s differs from the checked trie decode\n", b, where, s.name);
          print_hypotheses(s.name, r);
          print_hypotheses("checked trie", ref_trie);
          std::exit(1);
        }
        return std::pair<double, double>{w1 - w0, c1 - c0};
      };
      for (int32_t w = 0; w < warmup; ++w)
        for (Side& s : sides) call(s, "warm-up");
      for (int32_t r = 0; r < runs; ++r) {
        std::printf("  run %d/%d: %s\n", r + 1, runs, load_average().c_str());
        for (Side& s : sides) {
          s.wall.emplace_back();
          s.cpu.emplace_back();
        }
        for (int32_t k = 0; k < reps; ++k)
          for (size_t i = 0; i < sides.size(); ++i) {
            Side& s = sides[(i + static_cast<size_t>(k)) % sides.size()];
            const auto [wall, cpu] = call(s, "timed");
            s.wall.back().push_back(wall);
            s.cpu.back().push_back(cpu);
          }
      }
      const double tokens = static_cast<double>(b) * row.steps;
      std::vector<double> t_tps, b_tps, ratio, t_cpu, b_cpu;
      for (int32_t r = 0; r < runs; ++r) {
        const double tw = median(sides[0].wall[static_cast<size_t>(r)]), bw = median(sides[1].wall[static_cast<size_t>(r)]);
        t_tps.push_back(tokens / tw);
        b_tps.push_back(tokens / bw);
        ratio.push_back(bw / tw);
        t_cpu.push_back(median(sides[0].cpu[static_cast<size_t>(r)]));
        b_cpu.push_back(median(sides[1].cpu[static_cast<size_t>(r)]));
      }
      row.trie_tps = spread(t_tps);
      row.batch_tps = spread(b_tps);
      row.ratio = spread(ratio);
      row.trie_cpu = spread(t_cpu);
      row.batch_cpu = spread(b_cpu);
      std::printf("  tokens/s: trie %.1f [%.1f .. %.1f], batch %.1f [%.1f .. %.1f]; trie / batch %.2fx [%.2f .. %.2f]; CPU s per decode: trie %.2f, batch %.2f\n\n",
                  row.trie_tps.med, row.trie_tps.lo, row.trie_tps.hi, row.batch_tps.med, row.batch_tps.lo, row.batch_tps.hi, row.ratio.med,
                  row.ratio.lo, row.ratio.hi, row.trie_cpu.med, row.batch_cpu.med);
      rows.push_back(row);
    }
    std::printf("| b | steps | engine cells trie: peak / mean | batch: peak / mean | batch / trie (peak) | trie tokens/s [min .. max] | batch tokens/s [min .. max] | trie / batch [min .. max] | same hypotheses and scores |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n");
    for (const Row& r : rows)
      std::printf("| %d | %d | %lld / %.1f | %lld / %.1f | %.2fx | %.1f [%.1f .. %.1f] | %.1f [%.1f .. %.1f] | **%.2fx** [%.2f .. %.2f] | bit-equal |\n", r.b, r.steps,
                  static_cast<long long>(r.trie_peak), r.trie_mean, static_cast<long long>(r.batch_peak), r.batch_mean,
                  static_cast<double>(r.batch_peak) / static_cast<double>(r.trie_peak), r.trie_tps.med, r.trie_tps.lo, r.trie_tps.hi,
                  r.batch_tps.med, r.batch_tps.lo, r.batch_tps.hi, r.ratio.med, r.ratio.lo, r.ratio.hi);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_llama_cpp: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
