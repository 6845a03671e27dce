// Shared by the small LibTorch benchmark programs: "--name value" options
// over defaults, and the small random-Llama configuration they run on.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/model/torch/llama_config.h"
#include "core/decode/decode_options.h"
#ifdef TRIESCOPE_WITH_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/device_selector.h"
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

// The beam step's selector for --selector (cpu | cuda | auto): "cuda" is the
// CUDA backend's (cuda::DeviceSelector: the logits of a model on "cuda" are
// ranked where they are, only the 2b candidates come back); "auto" takes it
// on device "cuda" in a build with CUDA. Sets `name` to what was taken.
inline DecodeOptions selector_options(const std::string& selector, const std::string& device, std::string& name) {
  DecodeOptions o;
  name = selector == "auto" ? (device == "cuda" ? "cuda" : "cpu") : selector;
  if (name != "cpu" && name != "cuda") throw std::runtime_error("--selector must be cpu, cuda or auto, got " + selector);
#ifdef TRIESCOPE_WITH_CUDA
  if (name == "cuda") o.make_selector = [] { return std::make_unique<cuda::DeviceSelector>(); };
#else
  if (selector == "cuda") throw std::runtime_error("--selector cuda needs a build with CUDA (TRIESCOPE_WITH_CUDA)");
  name = "cpu";
#endif
  return o;
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
