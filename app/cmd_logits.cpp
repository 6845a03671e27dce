// triescope logits: the next-token logits at every position of each prompt,
// run causally from position 0 through the LibTorch transformer, written as
// one safetensors file ("logits.<i>": [prompt i's length, vocab], F32) that
// numpy, torch or any other implementation reads, to compare a checkpoint's
// forward pass with another's (tests/peer does it with transformers).
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "core/config/json_reader.h"
#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/model/torch/torch_transformer.h"

namespace triescope::cli {

namespace {

// prompts.json: an array whose elements are arrays of token ids or strings
// (encoded with the model's tokenizer.json).
std::vector<std::vector<int32_t>> prompts_load(const std::string& path, const TorchTransformer& m) {
  const nlohmann::json j = json_load_file(path);  // the one depth-limited reader
  TS_CHECK(j.is_array() && !j.empty(), path << ": must be a non-empty array of prompts (arrays of token ids or strings)");
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& p = j[i];
    std::vector<int32_t> ids;
    if (p.is_string()) {
      ids = model_encode_text(m, p.get<std::string>());
    } else {
      TS_CHECK(p.is_array(), path << ": prompts[" << i << "] must be an array of token ids or a string");
      for (size_t k = 0; k < p.size(); ++k) {
        TS_CHECK(p[k].is_number_integer() && p[k].get<int64_t>() >= 0 && p[k].get<int64_t>() < m.vocab_size(),
                 path << ": prompts[" << i << "][" << k << "] must be a token id in [0, " << m.vocab_size() << "), got " << p[k].dump());
        ids.push_back(p[k].get<int32_t>());
      }
    }
    TS_CHECK(!ids.empty(), path << ": prompts[" << i << "] holds no tokens");
    out.push_back(std::move(ids));
  }
  return out;
}

// One forward over the prompt as a chain: position i reads slots [0, i].
HostTensor causal_logits(Model& m, const std::vector<int32_t>& tokens) {
  m.reset();
  const auto n = static_cast<int32_t>(tokens.size());
  StepInput in;
  in.tokens = tokens;
  in.num_slots = n;
  in.mask.reset(n, n);
  for (int32_t i = 0; i < n; ++i) {
    in.positions.push_back(i);
    in.slots.push_back(i);
    for (int32_t k = 0; k <= i; ++k) in.mask.set(i, k);
  }
  Logits out;
  m.forward(in, out);
  return {{n, out.vocab}, std::move(out.data)};
}

}  // namespace

int cmd_logits(const Args& args) {
  auto p = parse_args(args, {"prompts", "out", "attention"}, {});
  TS_CHECK(p.positional.size() == 1, "logits: expected one model (a directory or a .gguf file), got " << p.positional.size() << " arguments");
  TS_CHECK(p.has("prompts") && p.has("out"), "logits: --prompts <prompts.json> and --out <logits.safetensors> are required");
  const std::string path = p.positional[0];
  const bool gguf = std::filesystem::path(path).extension() == ".gguf";
  TS_CHECK(gguf || std::filesystem::is_directory(path),
           "logits: \"" << path << "\" is neither a model directory (config.json + *.safetensors) nor a .gguf file");
  TransformerOptions opt;
  opt.attention = p.get("attention", "auto");
  TS_CHECK(opt.attention == "auto" || opt.attention == "dense" || opt.attention == "gather" || opt.attention == "tree_kernel",
           "logits: --attention must be auto, dense, gather or tree_kernel, got \"" << opt.attention << "\"");
  auto model = gguf ? TorchTransformer::load_gguf(path, opt) : TorchTransformer::load_dir(path, opt);
  const auto prompts = prompts_load(p.get("prompts"), *model);
  TensorMap out;
  for (size_t i = 0; i < prompts.size(); ++i) out["logits." + std::to_string(i)] = causal_logits(*model, prompts[i]);
  safetensors_write(p.get("out"), out, "F32");
  std::cout << "wrote " << p.get("out") << ": logits of " << prompts.size() << " prompts, vocab " << model->vocab_size() << "\n";
  return 0;
}

}  // namespace triescope::cli
