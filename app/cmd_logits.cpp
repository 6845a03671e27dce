// triescope logits: the next-token logits at every position of each prompt,
// run causally from position 0 through the LibTorch transformer, written as
// one safetensors file ("logits.<i>": [prompt i's length, vocab], F32) that
// numpy, torch or any other implementation reads, to compare a checkpoint's
// forward pass with another's (tests/peer does it with transformers).
// --incremental-from K decodes each prompt's first K tokens in one forward and
// the rest one token at a time; --tree L.json runs an engine layout's tree in
// one forward instead (the engine check of docs/engines.md, engine "libtorch").
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

// The first `k` tokens in one forward, then one query per token reading every
// slot before it: a generation loop's passes.
HostTensor incremental_logits(Model& m, const std::vector<int32_t>& tokens, int32_t k) {
  m.reset();
  const auto n = static_cast<int32_t>(tokens.size());
  std::vector<float> rows;
  int32_t vocab = 0;
  for (int32_t start = 0; start < n;) {
    const int32_t end = start == 0 ? std::min(std::max(k, 1), n) : start + 1;
    StepInput in;
    in.num_slots = end;
    in.mask.reset(end - start, end);
    for (int32_t i = start; i < end; ++i) {
      in.tokens.push_back(tokens[static_cast<size_t>(i)]);
      in.positions.push_back(i);
      in.slots.push_back(i);
      for (int32_t c = 0; c <= i; ++c) in.mask.set(i - start, c);
    }
    Logits out;
    m.forward(in, out);
    vocab = out.vocab;
    rows.insert(rows.end(), out.data.begin(), out.data.end());
    start = end;
  }
  return {{n, vocab}, std::move(rows)};
}

// An engine layout (docs/engines.md) with every node's pos and mask row given:
// the prompt as a chain, then the nodes in one forward, mask rows additive
// (a value <= -1e4 hides its column, as transformers' 4D masks).
TensorMap tree_logits(Model& m, const std::string& path) {
  const json j = json_load_file(path);
  JsonObjectReader r(j, path);
  TS_CHECK(r.get_int("engine_layout", 1, 1) == 1, path << ": engine_layout must be 1");
  const std::vector<int32_t> prompt = r.get_int_array("prompt", 0, m.vocab_size() - 1);
  const json& nodes = r.raw("nodes");
  const json& mask = r.raw("mask");
  r.finish();
  const auto p = static_cast<int32_t>(prompt.size());
  TS_CHECK(p > 0 && nodes.is_array() && !nodes.empty() && nodes.size() <= 4096,
           path << ": needs a non-empty prompt and 1 .. 4096 nodes");
  const auto n = static_cast<int32_t>(nodes.size());
  TS_CHECK(mask.is_array() && mask.size() == nodes.size(), path << ": mask: one row per node");
  HostTensor prompt_rows = causal_logits(m, prompt);  // leaves the prompt in slots 0 .. p - 1
  StepInput in;
  in.num_slots = p + n;
  in.mask.reset(n, p + n);
  for (int32_t i = 0; i < n; ++i) {
    JsonObjectReader node(nodes[static_cast<size_t>(i)], path, "nodes[" + std::to_string(i) + "]");
    node.get_int("parent", -1, i - 1);
    in.tokens.push_back(static_cast<int32_t>(node.get_int("token", 0, m.vocab_size() - 1)));
    in.positions.push_back(static_cast<int32_t>(node.get_int("pos", 0, 1 << 20)));
    if (node.has("seq")) node.raw("seq");
    node.finish();
    in.slots.push_back(p + i);
    const json& row = mask[static_cast<size_t>(i)];
    TS_CHECK(row.is_array() && row.size() == static_cast<size_t>(p + n), path << ": mask[" << i << "]: " << p + n << " columns");
    for (int32_t c = 0; c < p + n; ++c) {
      const json& v = row[static_cast<size_t>(c)];
      TS_CHECK(v.is_number() || v == "-inf", path << ": mask[" << i << "][" << c << "]: a number or \"-inf\"");
      if (v.is_number() && v.get<double>() > -1e4) in.mask.set(i, c);
    }
  }
  Logits out;
  m.forward(in, out);
  const auto v = static_cast<int64_t>(out.vocab);
  std::vector<float> last(prompt_rows.data.end() - v, prompt_rows.data.end());
  return {{"prompt", HostTensor{{v}, std::move(last)}}, {"tree", HostTensor{{n, v}, std::move(out.data)}}};
}

}  // namespace

int cmd_logits(const Args& args) {
  auto p = parse_args(args, {"prompts", "out", "attention", "tree", "incremental-from", "dtype"}, {});
  TS_CHECK(p.positional.size() == 1, "logits: expected one model (a directory or a .gguf file), got " << p.positional.size() << " arguments");
  TS_CHECK(p.has("prompts") != p.has("tree") && p.has("out"),
           "logits: --prompts <prompts.json> (or --tree <layout.json>) and --out <logits.safetensors> are required");
  const std::string path = p.positional[0];
  const bool gguf = std::filesystem::path(path).extension() == ".gguf";
  TS_CHECK(gguf || std::filesystem::is_directory(path),
           "logits: \"" << path << "\" is neither a model directory (config.json + *.safetensors) nor a .gguf file");
  TransformerOptions opt;
  opt.attention = p.get("attention", "auto");
  TS_CHECK(opt.attention == "auto" || opt.attention == "dense" || opt.attention == "gather" || opt.attention == "tree_kernel",
           "logits: --attention must be auto, dense, gather or tree_kernel, got \"" << opt.attention << "\"");
  opt.dtype = dtype_option_parse("logits", p.get("dtype", "fp32"));
  auto model = gguf ? TorchTransformer::load_gguf(path, opt) : TorchTransformer::load_dir(path, opt);
  if (p.has("tree")) {
    safetensors_write(p.get("out"), tree_logits(*model, p.get("tree")), "F32");
    std::cout << "wrote " << p.get("out") << ": the tree pass of " << p.get("tree") << "\n";
    return 0;
  }
  const auto prompts = prompts_load(p.get("prompts"), *model);
  const int64_t from = p.get_int("incremental-from", 1, 1 << 20, 0);
  TensorMap out;
  for (size_t i = 0; i < prompts.size(); ++i)
    out["logits." + std::to_string(i)] = from > 0 ? incremental_logits(*model, prompts[i], static_cast<int32_t>(from))
                                                   : causal_logits(*model, prompts[i]);
  safetensors_write(p.get("out"), out, "F32");
  std::cout << "wrote " << p.get("out") << ": logits of " << prompts.size() << " prompts, vocab " << model->vocab_size() << "\n";
  return 0;
}

}  // namespace triescope::cli
