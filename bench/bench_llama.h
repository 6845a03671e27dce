// Shared by the small LibTorch benchmark programs: "--name value" options
// over defaults, and the small random-Llama configuration they run on.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "core/model/torch/llama_config.h"
#ifdef TRIESCOPE_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace triescope::bench {

using Options = std::map<std::string, std::string>;

// Overrides `opts` from argv; false (with a message) on an unknown option.
inline bool parse_options(int argc, char** argv, Options& opts, const char* prog) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: %s [--option value ...]; options and their defaults:\n", prog);
      for (const auto& [k, v] : opts) std::printf("  --%s %s\n", k.c_str(), v.empty() ? "\"\"" : v.c_str());
      std::exit(0);
    }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !opts.count(k.substr(2))) {
      std::fprintf(stderr, "%s: unknown option %s\n", prog, k.c_str());
      return false;
    }
    opts[k.substr(2)] = argv[i + 1];
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "%s: option %s needs a value\n", prog, argv[argc - 1]);
    return false;
  }
  return true;
}

// Built with CUDA: the tree attention kernel serves attention "tree_kernel"
// (and "auto" on device "cuda"); without, a no-op.
inline void register_device_kernels() {
#ifdef TRIESCOPE_WITH_CUDA
  cuda::backend_tree_attention_register();
#endif
}

// 4 query heads, 2 KV heads, SwiGLU width 3 x hidden, from --layers/--hidden/--vocab.
inline LlamaConfig small_llama(const Options& o) {
  LlamaConfig c;
  c.num_hidden_layers = std::stoi(o.at("layers"));
  c.hidden_size = std::stoi(o.at("hidden"));
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = c.hidden_size / 4;
  c.intermediate_size = c.hidden_size * 3;
  c.vocab_size = std::stoi(o.at("vocab"));
  c.max_position_embeddings = 1 << 16;
  return c;
}

}  // namespace triescope::bench
