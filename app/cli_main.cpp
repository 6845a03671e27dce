#include <cstdio>
#include <iostream>
#include <new>
#include <string>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/common/version.h"
#include "core/decode/algorithm.h"
#include "core/decode/backend.h"
#ifdef TRIESCOPE_WITH_TORCH
#include <c10/util/Exception.h>

#include "core/model/torch/torch_transformer.h"
#endif
#ifdef TRIESCOPE_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif
#ifdef TRIESCOPE_WITH_LLAMA_CPP
#include "core/model/llama_cpp/llama_cpp_model.h"
#endif

namespace triescope::cli {

namespace {
void usage() {
  std::cout << "usage: triescope <command> [args]\n"
               "  run <sample.json> [--out trace.jsonl] [--backend " << backend_names_bar() << "] [--prompt TEXT] [--dtype fp32|bf16]  decode a sample, write its trace\n"
               "  diff <a.jsonl> <b.jsonl> [--tolerance 1e-6] [--junit F] [--html F]  first divergence of two traces (exit 1)\n"
               "  inspect <trace.jsonl> [--step N]                         text view of one step\n"
               "  check <trace.jsonl> [--max 20] [--junit F] [--html F]   every mask row and position id against its rule (exit 1)\n"
               "        --junit F: JUnit XML for CI, --html F: a self-contained page showing each fault (docs/ci.md)\n"
               "  make-checkpoint <config.json> <outdir> [--seed N] [--init-std 0.02] [--dtype F32]  random Llama checkpoint (LibTorch builds)\n"
               "  convert-checkpoint <model dir> <outdir> [--dtype F32]    one model.safetensors in one dtype (LibTorch builds)\n"
               "  logits <model dir | .gguf> --prompts prompts.json --out logits.safetensors [--dtype fp32|bf16]  next-token logits of each prompt (LibTorch builds)\n"
               "  tokenize <tokenizer.json> [TEXT | --decode \"IDS\" | --jsonl F] [--add-special-tokens] [--skip-special]  our BPE: text -> ids, ids -> text (LibTorch builds)\n"
               "  simulate [--beams 3,9,15] [--lengths 64,256] [--csv F]  trie vs batch KV slots per step\n"
               "  constraint build|stats|check|csr|random ...            STATIC constraint sets and CSR indexes\n"
               "  --version                                                the version (Python's triescope.__version__)\n"
               "algorithms (a sample's \"algorithm\"):\n";
  for (const AlgorithmSpec* a : algorithms()) std::cout << "  " << a->name << ": " << a->description << "\n";
}
}  // namespace

void register_backends() {
#ifdef TRIESCOPE_WITH_CUDA
  cuda::backend_register();  // with the tree attention kernel where the backend serves it from the start
#endif
#ifdef TRIESCOPE_WITH_TORCH
  torch_models_register();
#endif
#ifdef TRIESCOPE_WITH_LLAMA_CPP
  llama_cpp_models_register();
#endif
}

std::string backend_names_bar() {
  std::string out;
  for (const BackendSpec* b : backends()) out += (out.empty() ? "" : "|") + b->name;
  return out;
}

int cli_main(int argc, char** argv) {
  register_backends();
  file_temp_remove_on_signals();  // Ctrl-C during `run` leaves no trace.jsonl.tmp.<pid>
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage();
    return argc < 2 ? 2 : 0;
  }
  if (std::string(argv[1]) == "--version") {  // the same string as triescope.__version__ (core/common/version.h)
    std::cout << TRIESCOPE_VERSION << "\n";
    return 0;
  }
  const std::string cmd = argv[1];
  Args args(argv + 2, argv + argc);
  try {
#ifdef TRIESCOPE_WITH_TORCH
    if (cmd == "make-checkpoint") return cmd_make_checkpoint(args);
    if (cmd == "convert-checkpoint") return cmd_convert_checkpoint(args);
    if (cmd == "logits") return cmd_logits(args);
    if (cmd == "tokenize") return cmd_tokenize(args);
#endif
    if (cmd == "run") return cmd_run(args);
    if (cmd == "diff") return cmd_diff(args);
    if (cmd == "inspect") return cmd_inspect(args);
    if (cmd == "check") return cmd_check(args);
    if (cmd == "simulate") return cmd_simulate(args);
    if (cmd == "constraint") return cmd_constraint(args);
    std::cerr << "triescope: unknown command '" << cmd << "'\n";
    usage();
    return 2;
  } catch (const Error& e) {
    std::cerr << "triescope " << cmd << ": error: " << e.what() << "\n";
    return 2;
#ifdef TRIESCOPE_WITH_TORCH
  } catch (const c10::Error& e) {  // one the transformer did not name itself: its message, never its backtrace
    const std::string msg = e.what_without_backtrace();
    std::cerr << "triescope " << cmd << ": error: LibTorch: " << msg.substr(0, msg.find('\n')) << "\n";
    return 2;
#endif
  } catch (const std::bad_alloc&) {
    std::cerr << "triescope " << cmd << ": error: out of host memory; lower the beams or the prompt, or use attention \"auto\" or \"tree_kernel\"\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "triescope " << cmd << ": internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace triescope::cli
