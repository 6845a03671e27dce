#include <cstdio>
#include <iostream>
#include <string>

#include "app/commands.h"
#include "core/common/error.h"
#ifdef TRIESCOPE_WITH_TORCH
#include "core/model/torch/torch_transformer.h"
#endif
#ifdef TRIESCOPE_WITH_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/tree_attention.cuh"
#endif

namespace {
void usage() {
  std::cout << "usage: triescope <command> [args]\n"
               "  run <sample.json> [--out trace.jsonl] [--backend cpu|cuda|cuda-emu] [--prompt TEXT]  decode a sample, write its trace\n"
               "  diff <a.jsonl> <b.jsonl> [--tolerance 1e-6]             first divergence of two traces (exit 1)\n"
               "  inspect <trace.jsonl> [--step N]                         text view of one step\n"
               "  make-checkpoint <config.json> <outdir> [--seed N] [--init-std 0.02] [--dtype F32]  random Llama checkpoint (LibTorch builds)\n"
               "  simulate [--beams 3,9,15] [--lengths 64,256] [--csv F]  trie vs batch KV slots per step\n"
               "  constraint build|stats|check|csr|random ...            STATIC constraint sets and CSR indexes\n";
}
}  // namespace

int main(int argc, char** argv) {
  using namespace triescope::cli;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  Args args(argv + 2, argv + argc);
  try {
#ifdef TRIESCOPE_WITH_CUDA
    // Transformer attention "tree_kernel" / "auto" on device "cuda". The host
    // runtime's kernel reads CPU tensors, so it is registered only when
    // --backend cuda-emu asks for it (sample_use_cuda), never for --backend cpu.
    if (!triescope::cuda::kEmulated) triescope::cuda::tree_attention_register();
#endif
#ifdef TRIESCOPE_WITH_TORCH
    triescope::torch_models_register();
    if (cmd == "make-checkpoint") return cmd_make_checkpoint(args);
#endif
    if (cmd == "run") return cmd_run(args);
    if (cmd == "diff") return cmd_diff(args);
    if (cmd == "inspect") return cmd_inspect(args);
    if (cmd == "simulate") return cmd_simulate(args);
    if (cmd == "constraint") return cmd_constraint(args);
    std::cerr << "triescope: unknown command '" << cmd << "'\n";
    usage();
    return 2;
  } catch (const triescope::Error& e) {
    std::cerr << "triescope " << cmd << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "triescope " << cmd << ": internal error: " << e.what() << "\n";
    return 3;
  }
}
