// MultiGen's three sweeps (the paper's Section 4, scaled to a 2-core CPU) on
// the LibTorch transformer: time and peak KV bytes for Method 1 (copy),
// Method 2 (structured mask) and Method 3 (hybrid attention), one decode each,
// same seeded random weights and Philox stream (so all three draw the same
// samples; checked). Writes a CSV for plotting.
//
//   bench_multigen [--csv docs/results/multigen_sweeps.csv] [--layers 2] [--hidden 128] [--vocab 1024] [--seed 1]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/decode/multigen.h"
#include "bench/bench_llama.h"
#include "core/model/torch/torch_transformer.h"
#include "core/trace/trace.h"

using namespace triescope;

int main(int argc, char** argv) {
  bench::Options a = {{"csv", ""}, {"layers", "2"}, {"hidden", "128"}, {"vocab", "1024"}, {"seed", "1"}};
  if (!bench::parse_options(argc, argv, a, "bench_multigen")) return 2;
  try {
    const LlamaConfig c = bench::small_llama(a);
    TorchTransformer model(c, llama_random_weights(c, std::stoull(a["seed"]), 0.02), {});
    std::printf("config: layers %d, hidden %d, heads 4, kv_heads 2, vocab %d, fp32 CPU; temperature 1 sampling\n",
                c.num_hidden_layers, c.hidden_size, c.vocab_size);
    struct Point { const char* sweep; int n, m, k; };
    std::vector<Point> pts;
    for (int n : {16, 64, 128, 256}) pts.push_back({"vary_n", n, 16, 16});
    for (int m : {4, 16, 32, 64}) pts.push_back({"vary_m", 64, m, 16});
    for (int k : {1, 4, 16, 32}) pts.push_back({"vary_k", 64, 16, k});
    std::ostringstream csv;
    csv << "sweep,n,m,k,method,seconds,peak_slots,peak_kv_bytes,computed_tokens,attention_cells_dense,attention_cells_needed,same_samples\n";
    std::printf("| sweep | n | m | k | copy s | structured s | hybrid s | copy KV KiB | star KV KiB | KV ratio | hybrid / copy time | same samples |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    {  // warm-up
      MultiGenConfig w;
      w.num_samples = 2;
      w.max_new_tokens = 2;
      multigen_decode(model, {1, 2, 3}, w);
    }
    for (const Point& p : pts) {
      std::vector<int32_t> prompt(static_cast<size_t>(p.n));
      for (int i = 0; i < p.n; ++i) prompt[static_cast<size_t>(i)] = (i * 37 + 11) % c.vocab_size;
      MultiGenConfig cfg;
      cfg.num_samples = p.k;
      cfg.max_new_tokens = p.m;
      cfg.sampling.seed = 7;
      double secs[3];
      MultiGenResult res[3];
      const MultiGenMethod methods[3] = {MultiGenMethod::copy, MultiGenMethod::structured, MultiGenMethod::hybrid};
      for (int i = 0; i < 3; ++i) {
        cfg.method = methods[i];
        const auto t0 = std::chrono::steady_clock::now();
        res[i] = multigen_decode(model, prompt, cfg);
        secs[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      const bool same = res[0].samples == res[1].samples && res[1].samples == res[2].samples;
      for (int i = 0; i < 3; ++i) {
        const auto& m = res[i].metrics;
        csv << p.sweep << "," << p.n << "," << p.m << "," << p.k << "," << multigen_method_name(methods[i]) << "," << secs[i]
            << "," << m.peak_slots << "," << m.peak_bytes << "," << m.computed_tokens << "," << m.attention_cells_dense << ","
            << m.attention_cells_needed << "," << (same ? "yes" : "no") << "\n";
      }
      std::printf("| %s | %d | %d | %d | %.3f | %.3f | %.3f | %.0f | %.0f | %.2fx | %.2f | %s |\n", p.sweep, p.n, p.m, p.k,
                  secs[0], secs[1], secs[2], res[0].metrics.peak_bytes / 1024.0, res[2].metrics.peak_bytes / 1024.0,
                  static_cast<double>(res[0].metrics.peak_bytes) / static_cast<double>(res[2].metrics.peak_bytes),
                  secs[2] / secs[0], same ? "yes" : "NO");
      std::fflush(stdout);
    }
    if (!a["csv"].empty()) {
      file_write_atomic(a["csv"], csv.str());
      std::printf("csv: %s\n", a["csv"].c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_multigen: %s\n", e.what());
    return 2;
  }
  return 0;
}
