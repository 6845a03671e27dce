// Lookahead decoding on the LibTorch transformer: greedy vs independent-
// candidate verification vs trie-merged verification on a repetitive prompt
// (W = 10, N = 5, G = 5, as in the Korean paper). One decode each after a
// warm-up; wall clock; the outputs must be identical (checked).
//
//   bench_lookahead_torch [--layers 2] [--hidden 128] [--vocab 512] [--new 128] [--seed 3]
//                         [--device cpu] [--attention auto]
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"
#include "bench/bench_llama.h"
#include "core/model/torch/torch_transformer.h"

using namespace triescope;

int main(int argc, char** argv) {
  bench::Options a = {{"layers", "2"}, {"hidden", "128"}, {"vocab", "512"}, {"new", "128"}, {"seed", "3"},
                      {"device", "cpu"}, {"attention", "auto"}};
  if (!bench::parse_options(argc, argv, a, "bench_lookahead_torch")) return 2;
  try {
    const LlamaConfig c = bench::small_llama(a);
    bench::register_device_kernels();
    TransformerOptions opt;
    opt.device = a["device"];
    opt.attention = a["attention"];
    TorchTransformer model(c, llama_random_weights(c, std::stoull(a["seed"]), 0.2), opt);
    const int32_t T = std::stoi(a["new"]);
    // A repetitive prompt: a 6-token phrase said eight times.
    std::vector<int32_t> prompt;
    for (int r = 0; r < 8; ++r)
      for (int32_t t : {11, 42, 7, 99, 42, 5}) prompt.push_back(t % c.vocab_size);
    std::printf("config: layers %d, hidden %d, heads 4, kv_heads 2, vocab %d, init_std 0.2, fp32 %s, attention %s; prompt %zu tokens, %d new\n",
                c.num_hidden_layers, c.hidden_size, c.vocab_size, a["device"].c_str(), a["attention"].c_str(), prompt.size(), T);
    greedy_decode(model, prompt, 4);  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    const LookaheadResult g = greedy_decode(model, prompt, T);
    const double gs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("| method | forward passes | computed after prefill | verification tokens | seconds | tokens/s | same as greedy |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    std::printf("| greedy | %d | %lld | 0 | %.3f | %.1f | yes |\n", g.metrics.steps + 1,
                static_cast<long long>(g.metrics.computed_decode), gs, g.metrics.generated / gs);
    for (LookaheadVerify v : {LookaheadVerify::independent, LookaheadVerify::trie}) {
      LookaheadConfig cfg;
      cfg.max_new_tokens = T;
      cfg.window = 10;
      cfg.ngram = 5;
      cfg.max_candidates = 5;
      cfg.trie_depth = 4;
      cfg.trie_nodes = 64;
      cfg.verify = v;
      const auto t1 = std::chrono::steady_clock::now();
      const LookaheadResult r = lookahead_decode(model, prompt, cfg);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      std::printf("| lookahead, %s | %d | %lld | %lld | %.3f | %.1f | %s |\n", v == LookaheadVerify::trie ? "trie" : "independent",
                  r.metrics.steps + 1, static_cast<long long>(r.metrics.computed_decode),
                  static_cast<long long>(r.metrics.verify_tokens), s, r.metrics.generated / s,
                  r.tokens == g.tokens ? "yes" : "NO");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_lookahead_torch: %s\n", e.what());
    return 2;
  }
  return 0;
}
