// Trie vs batch beam search on the LibTorch transformer (trie paper Table 1
// shape): KV bytes and tokens/s for each beam width, all in one run, same
// seeded random weights, same prompt. Not Google Benchmark: one decode per
// (algorithm, b) is the measurement, and a decode takes seconds.
//
//   bench_torch [--layers 4] [--hidden 256] [--heads 4] [--kv-heads 2]
//               [--vocab 4096] [--prompt 512] [--new 128] [--beams 3,9,15]
//               [--gc 16] [--seed 1] [--device cpu] [--threads 0]
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "core/common/error.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/torch/torch_transformer.h"

using namespace triescope;

int main(int argc, char** argv) {
  std::map<std::string, std::string> a = {{"layers", "4"}, {"hidden", "256"}, {"heads", "4"},    {"kv-heads", "2"},
                                          {"vocab", "4096"}, {"prompt", "512"}, {"new", "128"},   {"beams", "3,9,15"},
                                          {"gc", "16"},      {"seed", "1"},     {"device", "cpu"}, {"threads", "0"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !a.count(k.substr(2))) {
      std::cerr << "bench_torch: unknown option " << k << "\n";
      return 2;
    }
    a[k.substr(2)] = argv[i + 1];
  }
  try {
    if (std::stoi(a["threads"]) > 0) at::set_num_threads(std::stoi(a["threads"]));
    LlamaConfig c;
    c.num_hidden_layers = std::stoi(a["layers"]);
    c.hidden_size = std::stoi(a["hidden"]);
    c.num_attention_heads = std::stoi(a["heads"]);
    c.num_key_value_heads = std::stoi(a["kv-heads"]);
    c.head_dim = c.hidden_size / c.num_attention_heads;
    c.intermediate_size = (c.hidden_size * 8 / 3 + 63) / 64 * 64;
    c.vocab_size = std::stoi(a["vocab"]);
    c.max_position_embeddings = 1 << 16;
    TransformerOptions opt;
    opt.device = a["device"];
    TorchTransformer model(c, llama_random_weights(c, std::stoull(a["seed"]), 0.02), opt);
    const int32_t n = std::stoi(a["prompt"]);
    std::vector<int32_t> prompt(static_cast<size_t>(n));
    uint64_t x = std::stoull(a["seed"]) * 7919 + 1;
    for (auto& t : prompt) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      t = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(c.vocab_size));
    }
    std::vector<int32_t> beams;
    std::stringstream bs(a["beams"]);
    for (std::string tok; std::getline(bs, tok, ',');) beams.push_back(std::stoi(tok));

    std::printf("config: layers %d, hidden %d, heads %d, kv_heads %d, head_dim %d, intermediate %d, vocab %d, fp32, "
                "device %s, threads %d; prompt %d, max_new_tokens %s (no EOS), gc_interval %s\n",
                c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                c.intermediate_size, c.vocab_size, opt.device.c_str(), at::get_num_threads(), n, a["new"].c_str(),
                a["gc"].c_str());
    {  // warm-up: LibTorch's first calls allocate and initialise; keep that out of the first row
      BeamConfig w;
      w.num_beams = 2;
      w.max_new_tokens = 4;
      batch_beam_search(model, prompt, w);
      trie_beam_search(model, prompt, w);
    }
    std::printf("| b | algorithm | peak KV slots | peak KV MiB | Mem/Tok (KiB) | seconds | tokens/s | same outputs |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (int32_t b : beams) {
      BeamConfig cfg;
      cfg.num_beams = b;
      cfg.max_new_tokens = std::stoi(a["new"]);
      cfg.eos_token = -1;
      cfg.early_stopping = EarlyStopping::never;
      cfg.gc_interval = std::stoi(a["gc"]);
      auto timed = [&](bool trie) {
        const auto t0 = std::chrono::steady_clock::now();
        DecodeResult r = trie ? trie_beam_search(model, prompt, cfg) : batch_beam_search(model, prompt, cfg);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return std::make_pair(std::move(r), s);
      };
      const auto [batch, bsec] = timed(false);
      const auto [trie, tsec] = timed(true);
      bool same = trie.hypotheses.size() == batch.hypotheses.size();
      for (size_t i = 0; same && i < trie.hypotheses.size(); ++i) same = trie.hypotheses[i].tokens == batch.hypotheses[i].tokens;
      // tokens/s: beam tokens generated (b x steps) over the whole decode, prefill included.
      auto row = [&](const char* name, const DecodeResult& r, double sec) {
        const double toks = static_cast<double>(b) * r.metrics.steps;
        std::printf("| %d | %s | %lld | %.2f | %.1f | %.2f | %.1f | %s |\n", b, name, static_cast<long long>(r.metrics.peak_slots),
                    static_cast<double>(r.metrics.peak_bytes) / (1024.0 * 1024.0), r.metrics.mem_per_token / 1024.0, sec,
                    toks / sec, same ? "yes" : "NO");
      };
      row("batch", batch, bsec);
      row("trie", trie, tsec);
      std::printf("| %d | ratio batch/trie | %.2fx | %.2fx | %.2fx | | trie speed-up %.2fx | |\n", b,
                  static_cast<double>(batch.metrics.peak_slots) / static_cast<double>(trie.metrics.peak_slots),
                  static_cast<double>(batch.metrics.peak_bytes) / static_cast<double>(trie.metrics.peak_bytes),
                  batch.metrics.mem_per_token / trie.metrics.mem_per_token, bsec / tsec);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_torch: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
