// Trie vs batch beam search on the LibTorch transformer (trie paper Table 1
// shape): KV bytes and tokens/s for each beam width, all in one run, same
// seeded random weights, same prompt. Not Google Benchmark: one decode per
// (algorithm, b) is the measurement, and a decode takes seconds.
//
//   bench_torch [--layers 4] [--hidden 256] [--heads 4] [--kv-heads 2]
//               [--vocab 4096] [--prompt 512] [--new 128] [--beams 3,9,15]
//               [--gc 16] [--seed 1] [--device cpu] [--threads 0]
//               [--attention auto] [--intermediate 0] [--preset none]
//               [--dtype fp32] [--selector auto]
// --attention: auto | dense | gather | tree_kernel (TransformerOptions);
// built with CUDA, the tree attention kernel is registered, so on --device
// cuda "auto" uses it. --preset llama-0.8b: 16 layers, hidden 2048, 32 heads,
// 8 KV heads (head_dim 64), SwiGLU 5632, vocab 32000, untied: 0.85B
// parameters (overrides the shape options). --intermediate 0: 8/3 hidden
// rounded up to 64. On a CUDA LibTorch the rows add the allocator's peak
// allocated bytes during each decode (weights included) and that peak minus
// what was allocated before the decode, per generated token. After each b, a
// "phases" row per algorithm splits the decode's wall time: the first
// forward (the prefill), then per later step the decoder's own host work
// (everything outside forward: selection, trie/mask upkeep, KV GC), the
// forward's host preparation (mask rows, CSR, cascade plan, uploads), its
// enqueueing of the layers (on a GPU: launch cost) and the wait for the
// logits (device work the enqueueing did not hide), all in ms
// (TorchTransformer::forward_times()), and the LibTorch operators dispatched
// per decode step, top-level (the model's own calls) and all (nested too),
// counted in extra untimed decodes (torch_ops_per_step). --dtype bf16: the
// model in bfloat16 (TransformerOptions::dtype, docs/transformer.md): KV
// bytes halve, "auto" never takes the tree kernel and "tree_kernel" is
// refused; trie and batch may then choose differently where scores are
// within bf16's rounding (their products have other shapes), so "same
// outputs" can say NO without a bug. --selector cpu | cuda | auto (cuda on
// --device cuda in a build with CUDA): the CUDA backend's selector reads the
// logits where the model left them (docs/cuda.md), as `triescope run
// --backend cuda` does.
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#ifdef TRIESCOPE_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "bench/bench_llama.h"
#include "core/common/error.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/torch/torch_transformer.h"

using namespace triescope;

namespace {
// LibTorch operators dispatched: the work of enqueueing a step on the host (on
// a GPU each costs about a launch, so operators x launch cost is the step's
// host-bound floor). Counted by RecordFunction callbacks (FUNCTION scope: the
// ATen operators) that are only installed for the short uncounted-time runs
// of torch_ops_per_step. `all` counts nested operators too (an operator
// that calls others counts each of them); `top_level` only those dispatched
// while no other operator runs on the same thread: the model's own calls.
struct TorchOpCounts {
  double top_level = 0;
  double all = 0;
};
std::atomic<int64_t> g_torch_ops{0};
std::atomic<int64_t> g_torch_top_level_ops{0};
thread_local int32_t t_torch_op_depth = 0;  // operators open on this thread

std::unique_ptr<at::ObserverContext> torch_op_enter(const at::RecordFunction&) {
  g_torch_ops.fetch_add(1, std::memory_order_relaxed);
  if (t_torch_op_depth++ == 0) g_torch_top_level_ops.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}
void torch_op_leave(const at::RecordFunction&, at::ObserverContext*) { --t_torch_op_depth; }

// Operators per decode step: (ops of a 5-step decode - ops of a 3-step one) / 2,
// so the prefill cancels out (no GC runs in either unless gc_interval < 5).
TorchOpCounts torch_ops_per_step(triescope::Model& model, const std::vector<int32_t>& prompt, triescope::BeamConfig cfg, bool trie,
                                 const triescope::DecodeOptions& dopt) {
  auto ops_of = [&](int32_t steps) {
    cfg.max_new_tokens = steps;
    g_torch_ops.store(0);
    g_torch_top_level_ops.store(0);
    if (trie) triescope::trie_beam_search(model, prompt, cfg, nullptr, dopt);
    else triescope::batch_beam_search(model, prompt, cfg, nullptr, dopt);
    return std::make_pair(g_torch_top_level_ops.load(), g_torch_ops.load());
  };
  const at::CallbackHandle h =
      at::addGlobalCallback(at::RecordFunctionCallback(&torch_op_enter, &torch_op_leave).scopes({at::RecordScope::FUNCTION}));
  const auto three = ops_of(3), five = ops_of(5);
  at::removeCallback(h);
  TS_CHECK(t_torch_op_depth == 0, "bench_torch: RecordFunction start and end callbacks unpaired (depth " << t_torch_op_depth << ")");
  return {static_cast<double>(five.first - three.first) / 2.0, static_cast<double>(five.second - three.second) / 2.0};
}
}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a = {{"layers", "4"}, {"hidden", "256"}, {"heads", "4"},    {"kv-heads", "2"},
                                          {"vocab", "4096"}, {"prompt", "512"}, {"new", "128"},   {"beams", "3,9,15"},
                                          {"gc", "16"},      {"seed", "1"},     {"device", "cpu"}, {"threads", "0"},
                                          {"attention", "auto"}, {"intermediate", "0"}, {"preset", "none"},
                                          {"dtype", "fp32"}, {"selector", "auto"}};
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
    c.intermediate_size = std::stoi(a["intermediate"]) > 0 ? std::stoi(a["intermediate"]) : (c.hidden_size * 8 / 3 + 63) / 64 * 64;
    c.vocab_size = std::stoi(a["vocab"]);
    c.max_position_embeddings = 1 << 16;
    if (a["preset"] == "llama-0.8b") {
      c.num_hidden_layers = 16;
      c.hidden_size = 2048;
      c.num_attention_heads = 32;
      c.num_key_value_heads = 8;
      c.head_dim = 64;
      c.intermediate_size = 5632;
      c.vocab_size = 32000;
    } else if (a["preset"] != "none") {
      throw std::runtime_error("--preset must be none or llama-0.8b, got " + a["preset"]);
    }
    bench::register_device_kernels();  // attention "tree_kernel" / "auto" on --device cuda
    TransformerOptions opt;
    opt.device = a["device"];
    opt.attention = a["attention"];
    if (a["dtype"] != "fp32" && a["dtype"] != "bf16") throw std::runtime_error("--dtype must be fp32 or bf16, got " + a["dtype"]);
    opt.dtype = a["dtype"] == "bf16" ? "bfloat16" : "float32";
    TorchTransformer model(c, llama_random_weights(c, std::stoull(a["seed"]), 0.02), opt);
    std::string selector;
    const DecodeOptions dopt = bench::selector_options(a["selector"], opt.device, selector);
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

    const double params = static_cast<double>(c.vocab_size) * c.hidden_size * 2 + c.hidden_size +
                          static_cast<double>(c.num_hidden_layers) *
                              (2.0 * c.hidden_size + static_cast<double>(c.hidden_size) * c.head_dim * (2 * c.num_attention_heads + 2 * c.num_key_value_heads) +
                               3.0 * c.hidden_size * c.intermediate_size);
    std::printf("config: layers %d, hidden %d, heads %d, kv_heads %d, head_dim %d, intermediate %d, vocab %d (%.1fM parameters), %s, "
                "device %s, attention %s, selector %s, threads %d; prompt %d, max_new_tokens %s (no EOS), gc_interval %s\n",
                c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                c.intermediate_size, c.vocab_size, params / 1e6, a["dtype"].c_str(), opt.device.c_str(), opt.attention.c_str(), selector.c_str(),
                at::get_num_threads(), n,
                a["new"].c_str(), a["gc"].c_str());
    {  // warm-up: LibTorch's first calls allocate and initialise; keep that out of the first row
      BeamConfig w;
      w.num_beams = 2;
      w.max_new_tokens = 4;
      batch_beam_search(model, prompt, w, nullptr, dopt);
      trie_beam_search(model, prompt, w, nullptr, dopt);
    }
    std::printf("| b | algorithm | attention | peak KV slots | peak KV MiB | Mem/Tok (KiB) | seconds | tokens/s | same outputs | "
                "device peak MiB | (peak - before)/tok KiB |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int32_t b : beams) {
      BeamConfig cfg;
      cfg.num_beams = b;
      cfg.max_new_tokens = std::stoi(a["new"]);
      cfg.eos_token = -1;
      cfg.early_stopping = EarlyStopping::never;
      cfg.gc_interval = std::stoi(a["gc"]);
      double dev_peak[2] = {-1, -1}, dev_before[2] = {0, 0};  // [batch, trie] bytes; -1: not measured (no CUDA LibTorch)
      std::string path[2];
      TorchTransformer::ForwardTimes ft[2];
      auto timed = [&](bool trie) {
        model.reset();  // frees the previous decode's cache before the peak is reset
        model.reset_forward_times();
#ifdef TRIESCOPE_TORCH_CUDA
        if (opt.device == "cuda") {
          c10::cuda::CUDACachingAllocator::resetPeakStats(0);
          dev_before[trie] = static_cast<double>(c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].current);
        }
#endif
        const auto t0 = std::chrono::steady_clock::now();
        DecodeResult r = trie ? trie_beam_search(model, prompt, cfg, nullptr, dopt) : batch_beam_search(model, prompt, cfg, nullptr, dopt);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
#ifdef TRIESCOPE_TORCH_CUDA
        if (opt.device == "cuda")  // index 0: StatType::AGGREGATE (the same in LibTorch 1.13 and 2.x)
          dev_peak[trie] = static_cast<double>(c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].peak);
#endif
        path[trie] = model.last_attention();
        ft[trie] = model.forward_times();
        return std::make_pair(std::move(r), s);
      };
      const auto [batch, bsec] = timed(false);
      const auto [trie, tsec] = timed(true);
      bool same = trie.hypotheses.size() == batch.hypotheses.size();
      for (size_t i = 0; same && i < trie.hypotheses.size(); ++i) same = trie.hypotheses[i].tokens == batch.hypotheses[i].tokens;
      // tokens/s: beam tokens generated (b x steps) over the whole decode, prefill included.
      auto row = [&](const char* name, const DecodeResult& r, double sec, int k) {
        const double toks = static_cast<double>(b) * r.metrics.steps;
        char dev[96] = "n/a | n/a";
        if (dev_peak[k] >= 0)
          std::snprintf(dev, sizeof dev, "%.1f | %.1f", dev_peak[k] / (1024.0 * 1024.0), (dev_peak[k] - dev_before[k]) / toks / 1024.0);
        std::printf("| %d | %s | %s | %lld | %.2f | %.1f | %.2f | %.1f | %s | %s |\n", b, name, path[k].c_str(),
                    static_cast<long long>(r.metrics.peak_slots), static_cast<double>(r.metrics.peak_bytes) / (1024.0 * 1024.0),
                    r.metrics.mem_per_token / 1024.0, sec, toks / sec, same ? "yes" : "NO", dev);
      };
      row("batch", batch, bsec, 0);
      row("trie", trie, tsec, 1);
      if (dev_peak[0] >= 0)
        std::printf("| %d | device (peak - before) batch/trie | %.2fx | | | | | | | | |\n", b,
                    (dev_peak[0] - dev_before[0]) / std::max(1.0, dev_peak[1] - dev_before[1]));
      auto phases = [&](const char* name, double sec, int k) {
        const TorchTransformer::ForwardTimes& f = ft[k];
        const double steps = static_cast<double>(std::max<int64_t>(1, f.calls - 1));
        const double later = f.prep_s + f.enqueue_s + f.wait_s;
        const TorchOpCounts ops = torch_ops_per_step(model, prompt, cfg, k == 1, dopt);
        std::printf("| %d | %s phases | prefill %.1f ms | per step: decoder host %.2f ms, forward prep %.2f ms, enqueue %.2f ms, "
                    "wait %.2f ms | %lld forwards | LibTorch ops per step: top-level %.0f, all %.0f | | | | | |\n",
                    b, name, f.first_s * 1e3, (sec - f.first_s - later) / steps * 1e3, f.prep_s / steps * 1e3, f.enqueue_s / steps * 1e3,
                    f.wait_s / steps * 1e3, static_cast<long long>(f.calls), ops.top_level, ops.all);
      };
      phases("batch", bsec, 0);
      phases("trie", tsec, 1);
      std::printf("| %d | ratio batch/trie | | %.2fx | %.2fx | %.2fx | | trie speed-up %.2fx | | | |\n", b,
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
