// TorchTransformer: a Llama-architecture decoder in LibTorch behind the Model
// seam (docs/architecture.md). Token embedding, RMSNorm, rotary embeddings driven
// by each query's explicit position id (its tree depth, not its index in the
// flat step), grouped-query attention, SwiGLU MLP, tied or untied head.
// KV cache: one tensor per layer, [2 (K, V), slots, kv_heads, head_dim],
// addressed by slot; a compaction plan is one index_select per layer.
// fp32 compute by default (fp16/bf16 checkpoints are converted on load); with
// dtype "bfloat16" weights, activations and the cache are bf16, the attention
// scores' softmax and RMSNorm's normaliser fp32, the logits returned in fp32.
//
// This header includes no LibTorch headers (the implementation is behind a
// pointer), so code that only builds or drives a model compiles fast.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/torch/bpe_tokenizer.h"
#include "core/model/torch/llama_config.h"

namespace triescope {

struct TransformerOptions {
  std::string device = "cpu";  // "cpu" or "cuda" (needs a LibTorch built with CUDA)
  // How a step's attention reads the cache; all three compute the same
  // function (tests run each against the same reference). dense: every query
  // scores every slot, the mask rows become an additive 0/-inf matrix.
  // auto: dense blocks: runs of consecutive queries scored against just the
  // slot span their rows cover (one block for a trie step or a prefill; about
  // one block per beam for the batch layout, whose rows are block-diagonal, so
  // the baseline is not charged b^2 attention work a real batch implementation
  // never does). gather: each query gathers exactly the slots its row allows.
  // tree_kernel: one tree attention call per layer over the raw cache, each
  // query reading only its CSR ancestor list (core/model/tree_attention.h):
  // on "cuda" the kernel cuda/ registers (cuda::tree_attention_register(); an
  // error when none is), on "cpu" its double-precision CPU twin (slow; it is
  // there to test the plumbing). On "cuda", auto means tree_kernel when the
  // kernel is registered.
  std::string attention = "auto";
  // "float32" or "bfloat16" (docs/transformer.md, "dtype"). bfloat16 refuses
  // attention "tree_kernel" (its kernel reads fp32), and "auto" never picks it.
  std::string dtype = "float32";
  nlohmann::json source;  // what describe() says about where the weights came from
};

class TorchTransformer : public Model {
 public:
  TorchTransformer(const LlamaConfig& cfg, const TensorMap& weights, TransformerOptions opt);
  ~TorchTransformer() override;

  int32_t vocab_size() const override;
  void forward(const StepInput& in, Logits& out) override;
  void compact(const CompactionPlan& plan) override;
  void reset() override;
  nlohmann::json describe() const override;
  KvShape kv_shape() const override;
  std::vector<std::string> vocab_strings() const override;

  const LlamaConfig& config() const;
  void set_tokenizer(std::shared_ptr<const BpeTokenizer> tok);
  const BpeTokenizer* tokenizer() const;
  // Attention path taken by the last forward: "dense" (one block over all
  // slots), "blocks", "gather", "hybrid" or "tree_kernel".
  const std::string& last_attention() const;
  // Wall time of forward() since the last reset (bench_torch prints it):
  // `first_s` for the first forward (a prefill), then for every later one by
  // phase, summed: host preparation (mask rows, CSR, cascade plan, uploads),
  // enqueueing the layers (on a GPU: launch cost; on the CPU: the compute),
  // and waiting for the logits (on a GPU: device work the enqueueing did not
  // hide).
  struct ForwardTimes {
    int64_t calls = 0;
    double prep_s = 0.0, enqueue_s = 0.0, wait_s = 0.0, first_s = 0.0;
  };
  const ForwardTimes& forward_times() const;
  void reset_forward_times();

  // Decode forwards shaped for a captured step (issue 33, item 3): a forward
  // whose logits stay on the device (StepInput::logits_may_stay_on_device),
  // through the tree kernel on a GPU or the host runtime, with every row's
  // logits wanted and no shared-prefix hint, is padded to its bucket of
  // query counts (core/model/decode_buckets.h): root queries on scratch
  // slots past num_slots, each attending to itself, their logits rows never
  // read, their slots marked empty again after the forward. Every LibTorch
  // shape of such a step is then one of a fixed set. Any other forward runs
  // at its own size (eager).
  struct BucketedForwards {
    std::map<int32_t, int64_t> by_bucket;  // bucket -> padded forwards
    int64_t eager = 0;
  };
  const BucketedForwards& bucketed_forwards() const;

  // A Hugging Face model directory: config.json, model.safetensors (or the
  // sharded index) and, when present, tokenizer.json.
  static std::unique_ptr<TorchTransformer> load_dir(const std::string& dir, TransformerOptions opt = {});
  // A llama.cpp GGUF file: weights (dequantised to fp32) and, when the file
  // has one, its byte-level BPE tokenizer (gguf_llama.h).
  static std::unique_ptr<TorchTransformer> load_gguf(const std::string& path, TransformerOptions opt = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Registers model type "transformer" with model_from_json (model_factory.h).
// Idempotent; the CLI calls it at start-up, tests before they load samples.
// Model object: {"type": "transformer", "path": "<HF dir or .gguf file>"} or
// {"type": "transformer", "random_init": {config.json keys}, "seed": N,
//  "init_std": 0.02}, plus optional "tokenizer", "device", "attention", "dtype".
void torch_models_register();

// Text in and out for a model that has a tokenizer (a TorchTransformer
// loaded with tokenizer.json); an Error otherwise.
std::vector<int32_t> model_encode_text(const Model& m, const std::string& text);
std::string model_decode_text(const Model& m, const std::vector<int32_t>& ids);
bool model_has_tokenizer(const Model& m);

}  // namespace triescope
