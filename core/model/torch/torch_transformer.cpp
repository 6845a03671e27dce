#include "core/model/torch/torch_transformer.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/common/error.h"
#include "core/model/torch/gguf_llama.h"
#include "core/model/decode_buckets.h"
#include "core/model/tree_attention.h"
#include "core/model/tree_attention_cascade.h"

namespace triescope {

namespace {
constexpr const char* kTreeKernelFp32Only =
    "transformer: dtype \"bfloat16\" cannot run attention \"tree_kernel\" (the tree attention kernel and its CPU twin "
    "read fp32 queries and cache); use attention \"auto\", \"dense\" or \"gather\"";
at::Tensor host_to_tensor(const HostTensor& t, const at::Device& dev) {
  return at::from_blob(const_cast<float*>(t.data.data()), t.shape, at::TensorOptions().dtype(at::kFloat)).clone().to(dev);
}
at::Tensor long_tensor(const std::vector<int64_t>& v, const at::Device& dev) {
  return at::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())}, at::TensorOptions().dtype(at::kLong))
      .clone()
      .to(dev);
}
}  // namespace

struct TorchTransformer::Impl {
  LlamaConfig cfg;
  TransformerOptions opt;
  at::Device dev{at::kCPU};
  // The dtype of weights, activations and the KV cache: kFloat, or kBFloat16
  // for opt.dtype "bfloat16" (whose softmax and normalisers still run in fp32).
  at::ScalarType dt = at::kFloat;
  // Projection weights are held as their transposes [in, out]: views of the
  // checkpoint's [out, in] tensors made once at load (see linear2d).
  struct Layer {
    at::Tensor in_norm, wq, wk, wv, bq, bk, bv, wo, bo, post_norm, wg, wu, wd;
  };
  at::Tensor embed, norm, head, inv_freq;  // head: transposed like the projections
  at::Tensor rms_eps;  // rms_norm_eps as a 0-dim fp32 tensor on the device (a double scalar costs a conversion per call)
  std::vector<Layer> layers;
  std::vector<at::Tensor> kv;    // [layers] each [2, capacity, kv_heads, head_dim]
  int64_t capacity = 0;          // slots the cache tensors hold
  std::vector<uint8_t> written;  // [capacity] 1 once a forward wrote the slot
  std::shared_ptr<const BpeTokenizer> tokenizer;
  std::string last_attention = "none";
  // The step in flight, for naming a LibTorch failure: its slots and its
  // largest attention scores tensor (rows x columns per head; 0 before known).
  int64_t step_slots = 0, step_rows = 0, step_cols = 0;
  ForwardTimes times;
  bool tree_kernel = false;  // attention through TreeAttentionArgs (the CUDA kernel, or its CPU twin on the CPU)

  // at::linear(x, w, b) of a 2-D x given w's transpose: the call linear
  // itself makes (addmm with a bias, mm without), the same bits, without
  // the four dispatches per call it spends on transposing and matmul.
  static at::Tensor linear2d(const at::Tensor& x, const at::Tensor& w_t, const at::Tensor& b) {
    return b.defined() ? at::addmm(b, x, w_t) : at::mm(x, w_t);
  }
  // HF's LlamaRMSNorm: the normaliser in fp32, the normalised x cast back
  // to x's dtype before the weight (both casts no-ops in float32).
  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w) const {
    const at::Tensor xf = x.to(at::kFloat);
    return w * (xf * at::rsqrt((xf * xf).mean(-1, true) + rms_eps)).to(x.scalar_type());
  }
  // Attention scores for the mask and the softmax, in fp32 (a no-op in float32).
  static at::Tensor scores_fp32(const at::Tensor& s) { return s.to(at::kFloat); }
  // The softmax over the last dimension in fp32, cast to the compute dtype
  // for the product with V (a no-op in float32).
  at::Tensor softmax_probs(const at::Tensor& scores) const { return at::softmax(scores, -1).to(dt); }
  // rotate_half convention (HF Llama): x * cos + cat(-x2, x1) * sin, computed
  // as x * cos + roll(x, h) * cat(-sin1, sin2): the same products bit for bit
  // (x2 * -s equals -x2 * s), and on CUDA one roll kernel in place of a
  // negation and a concatenation per call (the signed sines are made once a step).
  static at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin_signed) {
    const int64_t h = x.size(-1) / 2;
    return x * cos + x.roll(h, -1) * sin_signed;
  }
  void forward(const StepInput& in, Logits& out);

  // A dense block: a run of consecutive queries scored against the slot
  // span [lo, lo + span) covering their rows.
  struct Block {
    int64_t q0, n, lo, span;
    std::vector<float> add;  // [n x span] additive mask: 0 allowed, -inf not
  };
  // One step's attention, planned on the host from its mask rows.
  struct Plan {
    int64_t q = 0;                            // queries
    std::vector<std::vector<int64_t>> rows;   // [q] allowed slots per query, ascending
    int64_t longest = 0;                      // the longest row
    int64_t P = 0;                            // shared_prefix_slots
    bool tk = false, hybrid = false, gather = false;
    int64_t L2 = 0;                           // hybrid: the most slots >= P any query reads
    std::vector<float> hadd;                  // [q x L2] additive mask over each query's own gathered slots
    std::vector<int64_t> hidx;                // [q x L2] slot read at each column (padding repeats slot P - 1, masked)
    std::vector<Block> blocks;                // dense and "auto" blocks
    std::vector<float> gadd;                  // [q x longest] gather path: additive mask over each query's gathered slots
    std::vector<int64_t> gather_idx;          // [q x longest] slot read at each column (padding reads the row's first slot, masked)
  };
  // The step's inputs on the device, shared by every layer.
  struct Inputs {
    at::Tensor tok, slots, logits_rows, mask, gidx, hmask, hgidx, cos, sin_signed;  // sin_signed: cat(-sin1, sin2), see rope
    std::vector<at::Tensor> block_mask;  // [blocks]
    // Tree kernel: each query's allowed slots as one CSR list.
    std::vector<int32_t> csr_ptr, csr_ids;
    at::Tensor tk_ptr, tk_ids, tk_work, tk_status, tk_cascade;
    TreeAttentionCascadeTable cascade;
    TreeAttentionArgs targs;
    const TreeAttentionKernel* kernel = nullptr;  // null: the CPU twin
  };
  // What a forward leaves for a device selector (leave_logits), alive until the next one.
  at::Tensor kept_logits, kept_status;
  BucketedForwards bucketed;
  int32_t padding_bucket(const StepInput& in) const;
  static StepInput padded_to_bucket(const StepInput& in, int32_t bucket);
  const TreeAttentionKernel* device_kernel() const;
  bool logits_readable_in_place() const;
  void check_kernel_status(const Inputs& inputs) const;
  void download_logits(const at::Tensor& logits_dev, const Inputs& inputs, Logits& out) const;
  void leave_logits(const at::Tensor& logits_dev, const Inputs& inputs, Logits& out);
  void mark_written(const StepInput& in, int64_t S);
  void read_rows(const StepInput& in, Plan& p) const;
  Plan plan_step(const StepInput& in);
  void plan_hybrid(Plan& p) const;
  void plan_blocks(Plan& p) const;
  static std::vector<Block> blocks_overlapping(const std::vector<std::vector<int64_t>>& rows);
  static std::vector<Block> blocks_auto(const std::vector<std::vector<int64_t>>& rows);
  // Queries a dense block needs before "auto" prefers it to the tree kernel.
  static constexpr int64_t kDenseBlockMinRows = 64;
  static bool prefill_shaped(const Plan& p);
  void plan_gather(Plan& p) const;
  Inputs upload(const StepInput& in, const Plan& p) const;
  void setup_tree_kernel(const Plan& p, Inputs& t) const;
  at::Tensor layer_forward(size_t l, const at::Tensor& x, const Plan& p, const Inputs& t);
  at::Tensor attend_tree_kernel(size_t l, const at::Tensor& qh, const Plan& p, const Inputs& t) const;
  at::Tensor attend_hybrid(const at::Tensor& qh, const at::Tensor& K, const at::Tensor& V, const Plan& p, const Inputs& t) const;
  at::Tensor attend_blocks(const at::Tensor& qh, const at::Tensor& K, const at::Tensor& V, const Plan& p, const Inputs& t) const;
  at::Tensor attend_gather(const at::Tensor& qh, const at::Tensor& K, const at::Tensor& V, const Plan& p, const Inputs& t) const;
  void ensure_capacity(int64_t slots) {
    if (slots <= capacity) return;
    const int64_t cap = std::max<int64_t>({slots, 2 * capacity, 64});
    for (auto& t : kv) {
      // Zeros, not empty: the dense path multiplies masked-out V rows by exactly 0.
      at::Tensor n = at::zeros({2, cap, cfg.num_key_value_heads, cfg.head_dim}, at::TensorOptions().dtype(dt).device(dev));
      if (capacity > 0) n.narrow(1, 0, capacity).copy_(t);
      t = n;
    }
    if (kv.empty())
      for (int32_t l = 0; l < cfg.num_hidden_layers; ++l)
        kv.push_back(at::zeros({2, cap, cfg.num_key_value_heads, cfg.head_dim}, at::TensorOptions().dtype(dt).device(dev)));
    written.resize(static_cast<size_t>(cap), 0);
    capacity = cap;
  }
};

TorchTransformer::TorchTransformer(const LlamaConfig& cfg, const TensorMap& w, TransformerOptions opt)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.cfg = cfg;
  m.opt = std::move(opt);
  TS_CHECK(m.opt.device == "cpu" || m.opt.device == "cuda", "transformer: device must be \"cpu\" or \"cuda\", got \"" << m.opt.device << "\"");
  TS_CHECK(m.opt.attention == "auto" || m.opt.attention == "dense" || m.opt.attention == "gather" || m.opt.attention == "tree_kernel",
           "transformer: attention must be \"auto\", \"dense\", \"gather\" or \"tree_kernel\", got \"" << m.opt.attention << "\"");
  TS_CHECK(m.opt.dtype == "float32" || m.opt.dtype == "bfloat16",
           "transformer: dtype must be \"float32\" or \"bfloat16\", got \"" << m.opt.dtype << "\"");
  TS_CHECK(tree_attention_reads_dtype(m.opt.dtype) || m.opt.attention != "tree_kernel", kTreeKernelFp32Only);
  m.dt = m.opt.dtype == "bfloat16" ? at::kBFloat16 : at::kFloat;
  if (m.opt.device == "cuda") {
    TS_CHECK(at::hasCUDA(), "transformer: device \"cuda\" requested, but this LibTorch has no CUDA device available");
    m.dev = at::Device(at::kCUDA);
    TS_CHECK(m.opt.attention != "tree_kernel" || tree_attention_kernel(),
             "transformer: attention \"tree_kernel\" on device \"cuda\" needs the CUDA tree attention kernel, which this program "
             "did not register (build with TRIESCOPE_WITH_CUDA and call cuda::tree_attention_register() at start-up)");
  }
  // The tree attention kernel for every step: asked for, or "auto" where
  // cuda/ registered it (on a GPU, or on the CPU when it runs on the host
  // runtime). On the CPU without a registered host-runtime kernel,
  // "tree_kernel" runs the kernel's CPU twin (tree_attention_host), which
  // checks the same plumbing (CSR lists, raw cache layout) against the other
  // paths.
  m.tree_kernel = m.opt.attention == "tree_kernel" || (m.opt.attention == "auto" && tree_attention_reads_dtype(m.opt.dtype) && m.device_kernel());
  llama_weights_check(cfg, w, "transformer weights");
  c10::InferenceMode guard;
  auto get = [&](const std::string& name) { return host_to_tensor(w.at(name), m.dev).to(m.dt); };
  m.embed = get("model.embed_tokens.weight");
  m.norm = get("model.norm.weight");
  m.head = (cfg.tie_word_embeddings ? m.embed : get("lm_head.weight")).t();
  for (int32_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Impl::Layer L;
    L.in_norm = get(p + "input_layernorm.weight");
    L.wq = get(p + "self_attn.q_proj.weight").t();
    L.wk = get(p + "self_attn.k_proj.weight").t();
    L.wv = get(p + "self_attn.v_proj.weight").t();
    if (cfg.attention_bias) {
      L.bq = get(p + "self_attn.q_proj.bias");
      L.bk = get(p + "self_attn.k_proj.bias");
      L.bv = get(p + "self_attn.v_proj.bias");
    }
    L.wo = get(p + "self_attn.o_proj.weight").t();
    if (cfg.o_proj_bias) L.bo = get(p + "self_attn.o_proj.bias");
    L.post_norm = get(p + "post_attention_layernorm.weight");
    L.wg = get(p + "mlp.gate_proj.weight").t();
    L.wu = get(p + "mlp.up_proj.weight").t();
    L.wd = get(p + "mlp.down_proj.weight").t();
    m.layers.push_back(std::move(L));
  }
  m.rms_eps = at::scalar_tensor(m.cfg.rms_norm_eps, at::TensorOptions().dtype(at::kFloat).device(m.dev));
  // inv_freq as HF computes it: 1 / theta^(2i/d) in fp32.
  m.inv_freq = (1.0 / at::pow(m.cfg.rope_theta, at::arange(0, cfg.head_dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                                                    static_cast<double>(cfg.head_dim)))
                   .to(m.dev);
}

TorchTransformer::~TorchTransformer() = default;

int32_t TorchTransformer::vocab_size() const { return impl_->cfg.vocab_size; }
const LlamaConfig& TorchTransformer::config() const { return impl_->cfg; }
void TorchTransformer::set_tokenizer(std::shared_ptr<const BpeTokenizer> tok) { impl_->tokenizer = std::move(tok); }
const BpeTokenizer* TorchTransformer::tokenizer() const { return impl_->tokenizer.get(); }
const std::string& TorchTransformer::last_attention() const { return impl_->last_attention; }
const TorchTransformer::ForwardTimes& TorchTransformer::forward_times() const { return impl_->times; }
const TorchTransformer::BucketedForwards& TorchTransformer::bucketed_forwards() const { return impl_->bucketed; }
void TorchTransformer::reset_forward_times() { impl_->times = ForwardTimes{}; }

KvShape TorchTransformer::kv_shape() const {
  return KvShape{impl_->cfg.num_hidden_layers, impl_->cfg.num_key_value_heads, impl_->cfg.head_dim,
                 static_cast<int32_t>(at::elementSize(impl_->dt))};
}

void TorchTransformer::reset() {
  impl_->kv.clear();
  impl_->capacity = 0;
  impl_->written.clear();
}

void TorchTransformer::compact(const CompactionPlan& plan) {
  Impl& m = *impl_;
  m.ensure_capacity(plan.old_num_slots);
  std::vector<int64_t> src(plan.src.size());
  std::vector<uint8_t> written(plan.src.size());
  for (size_t i = 0; i < plan.src.size(); ++i) {
    TS_CHECK(plan.src[i] >= 0 && plan.src[i] < plan.old_num_slots,
             "transformer: compaction src[" << i << "] = " << plan.src[i] << " outside [0, " << plan.old_num_slots << ")");
    src[i] = plan.src[i];
    written[i] = m.written[static_cast<size_t>(plan.src[i])];
  }
  c10::InferenceMode guard;
  const at::Tensor idx = long_tensor(src, m.dev);
  for (auto& t : m.kv) t = t.index_select(1, idx);  // one gather per layer
  m.capacity = static_cast<int64_t>(src.size());
  m.written = std::move(written);
}

void TorchTransformer::Impl::forward(const StepInput& in_asked, Logits& out) {
  using clock = std::chrono::steady_clock;
  const auto t_start = clock::now();
  const LlamaConfig& c = cfg;
  step_input_check(in_asked, c.vocab_size);
  const bool stay = in_asked.logits_may_stay_on_device && logits_readable_in_place();
  const int32_t bucket = stay ? padding_bucket(in_asked) : 0;
  StepInput padded;
  if (bucket > 0) padded = padded_to_bucket(in_asked, bucket);
  const StepInput& in = bucket > 0 ? padded : in_asked;
  if (bucket > 0)
    ++bucketed.by_bucket[bucket];
  else
    ++bucketed.eager;
  const int64_t q = static_cast<int64_t>(in.tokens.size()), S = in.num_slots;
  const int64_t asked_rows = in_asked.logits_rows.empty() ? static_cast<int64_t>(in_asked.tokens.size())
                                                          : static_cast<int64_t>(in_asked.logits_rows.size());
  const int64_t rows = in.logits_rows.empty() ? q : static_cast<int64_t>(in.logits_rows.size());  // the LM head's rows
  if (stay) {  // out.data stays empty: the caller's device selector reads the rows where they are
    out.rows = static_cast<int32_t>(asked_rows);  // a padded step's first rows are the asked queries'; the rest are never read
    out.vocab = c.vocab_size;
    out.data.clear();
    out.device = {};
  } else {
    out.resize(static_cast<int32_t>(rows), c.vocab_size);
  }
  if (q == 0) return;
  step_slots = S;
  step_rows = step_cols = 0;
  ensure_capacity(S);
  mark_written(in, S);
  const Plan plan = plan_step(in);

  c10::InferenceMode guard;
  const Inputs inputs = upload(in, plan);
  const auto t_prepared = clock::now();
  at::Tensor x = at::embedding(embed, inputs.tok);  // [q, hidden]
  for (size_t l = 0; l < layers.size(); ++l) x = layer_forward(l, x, plan, inputs);
  if (rows < q) x = x.index_select(0, inputs.logits_rows);  // the norm and the head are per row
  const at::Tensor logits_dev = linear2d(rms_norm(x, norm), head, {});
  const auto t_enqueued = clock::now();
  if (stay)
    leave_logits(logits_dev, inputs, out);
  else
    download_logits(logits_dev, inputs, out);
  for (int32_t s = in_asked.num_slots; s < in.num_slots; ++s) written[static_cast<size_t>(s)] = 0;  // the padding's scratch slots
  const auto t_done = clock::now();
  auto sec = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  if (times.calls++ == 0) {
    times.first_s = sec(t_done - t_start);
    return;
  }
  times.prep_s += sec(t_prepared - t_start);
  times.enqueue_s += sec(t_enqueued - t_prepared);
  times.wait_s += sec(t_done - t_enqueued);
}

// The bucket a forward whose logits stay is padded to (BucketedForwards), or
// 0: it runs at its own size.
int32_t TorchTransformer::Impl::padding_bucket(const StepInput& in) const {
  if (!tree_kernel || !device_kernel() || !in.logits_rows.empty() || in.shared_prefix_slots > 0 || in.tokens.empty()) return 0;
  return decode_bucket(static_cast<int32_t>(in.tokens.size()));
}

// `in` with bucket - q root queries appended: each on its own scratch slot
// past in.num_slots, reading only that slot (the tree kernel never meets an
// empty list), at position 0 with the first query's token.
StepInput TorchTransformer::Impl::padded_to_bucket(const StepInput& in, int32_t bucket) {
  const auto q = static_cast<int32_t>(in.tokens.size());
  StepInput p;
  p.tokens = in.tokens;
  p.positions = in.positions;
  p.slots = in.slots;
  p.num_slots = in.num_slots + (bucket - q);
  p.logits_may_stay_on_device = true;
  p.mask.reset(bucket, p.num_slots);
  for (int32_t r = 0; r < q; ++r) std::copy(in.mask.row(r), in.mask.row(r) + in.mask.words_per_row, p.mask.row(r));
  for (int32_t i = 0; i < bucket - q; ++i) {
    p.tokens.push_back(in.tokens.front());
    p.positions.push_back(0);
    p.slots.push_back(in.num_slots + i);
    p.mask.set(q + i, in.num_slots + i);
  }
  return p;
}

// The registered tree attention kernel where it can read this model's
// tensors: on a GPU, or on the CPU when it runs on the host runtime (whose
// device memory is host memory); null otherwise (a plain CPU build: the CPU twin).
const TreeAttentionKernel* TorchTransformer::Impl::device_kernel() const {
  const TreeAttentionKernel* k = tree_attention_kernel();
  return k != nullptr && (dev.is_cuda() || k->host_memory) ? k : nullptr;
}

// Whether a device selector of this build can read the logits where the
// forward leaves them: on a GPU, or on the host runtime.
bool TorchTransformer::Impl::logits_readable_in_place() const { return dev.is_cuda() || device_kernel() != nullptr; }

// Throws the first bad input any layer's tree kernel launch met (the status
// must be readable: copied back, or host memory the finished kernel wrote).
void TorchTransformer::Impl::check_kernel_status(const Inputs& inputs) const {
  const at::Tensor st = inputs.tk_status.to(at::kCPU);
  const int32_t* sv = st.data_ptr<int32_t>();
  TS_CHECK(sv[0] == 0, "transformer: " << inputs.kernel->name << ": " << inputs.kernel->error_name(sv[0]) << " (query " << sv[1] << ", slot "
                                       << sv[2] << ")");
}

// The rows to the host: the copy synchronises, then the kernels' status is read.
void TorchTransformer::Impl::download_logits(const at::Tensor& logits_dev, const Inputs& inputs, Logits& out) const {
  const at::Tensor logits = logits_dev.to(at::kFloat).to(at::kCPU).contiguous();  // bf16 logits widened, as HF's generate does
  if (inputs.kernel) check_kernel_status(inputs);
  std::memcpy(out.data.data(), logits.data_ptr<float>(), sizeof(float) * static_cast<size_t>(out.rows) * static_cast<size_t>(out.vocab));
}

// The rows stay where the forward computed them (StepInput::logits_may_stay_on_device),
// fp32 (bf16 widened on the device), kept until the next forward. On a GPU
// nothing waits: the kernels' status rides with the selector's answer
// (DeviceLogits::status), all in order on LibTorch's current stream, the
// legacy default stream the tree kernel launches on. On the host runtime the
// kernels have finished and their status is host memory: read here.
void TorchTransformer::Impl::leave_logits(const at::Tensor& logits_dev, const Inputs& inputs, Logits& out) {
  kept_logits = logits_dev.to(at::kFloat).contiguous();
  kept_status = inputs.kernel ? inputs.tk_status : at::Tensor();
  out.device.rows = kept_logits.data_ptr<float>();
  out.device.rows_in_host_memory = !dev.is_cuda();
  out.device.stream = nullptr;
  if (!inputs.kernel) return;
  if (dev.is_cuda())
    out.device.status = kept_status.data_ptr<int32_t>();
  else
    check_kernel_status(inputs);
}

// Marks the step's slots as holding K/V: all writes happen before any read.
void TorchTransformer::Impl::mark_written(const StepInput& in, int64_t S) {
  std::vector<uint8_t> fresh(static_cast<size_t>(S), 0);
  for (size_t i = 0; i < in.slots.size(); ++i) {  // index_copy_ with a repeated slot would keep an arbitrary one
    TS_CHECK(!fresh[static_cast<size_t>(in.slots[i])], "transformer: slots[" << i << "] = " << in.slots[i] << " is written twice in one step");
    fresh[static_cast<size_t>(in.slots[i])] = 1;
  }
  for (int32_t s : in.slots) written[static_cast<size_t>(s)] = 1;
}

// Reads the mask rows once: allowed slots per query, checked against writes.
void TorchTransformer::Impl::read_rows(const StepInput& in, Plan& p) const {
  p.rows.assign(static_cast<size_t>(p.q), {});
  size_t longest = 0;
  for (int64_t r = 0; r < p.q; ++r) {
    const uint64_t* w = in.mask.row(static_cast<int32_t>(r));
    auto& row = p.rows[static_cast<size_t>(r)];
    for (int32_t wi = 0; wi < in.mask.words_per_row; ++wi)
      for (uint64_t bits = w[wi]; bits; bits &= bits - 1) {
        const int64_t s = int64_t{wi} * 64 + __builtin_ctzll(bits);
        TS_CHECK(written[static_cast<size_t>(s)], "transformer: query " << r << " reads slot " << s << " that holds no K/V");
        row.push_back(s);
      }
    TS_CHECK(!row.empty(), "transformer: mask row " << r << " allows no slot");
    longest = std::max(longest, row.size());
  }
  p.longest = static_cast<int64_t>(longest);
}

// Chooses the attention path and builds its host tables; records the path
// and the largest scores tensor for naming a LibTorch failure.
TorchTransformer::Impl::Plan TorchTransformer::Impl::plan_step(const StepInput& in) {
  Plan p;
  p.q = static_cast<int64_t>(in.tokens.size());
  read_rows(in, p);
  // MultiGen Method 3 (hybrid attention): every query reads slots [0, P)
  // (the prompt), so those are scored densely for all queries at once and
  // only each query's slots >= P are gathered; the k x k cross terms between
  // samples are never computed. Taken in "auto" mode whenever the step says so.
  p.P = in.shared_prefix_slots;
  p.tk = tree_kernel && !(opt.attention == "auto" && prefill_shaped(p));
  p.hybrid = !p.tk && opt.attention == "auto" && p.P > 0;
  if (p.P > 0)
    for (int64_t r = 0; r < p.q; ++r) {
      const auto& row = p.rows[static_cast<size_t>(r)];
      TS_CHECK(static_cast<int64_t>(row.size()) >= p.P && row[static_cast<size_t>(p.P - 1)] == p.P - 1,
               "transformer: shared_prefix_slots = " << p.P << " but mask row " << r << " does not read all of [0, " << p.P << ")");
    }
  if (p.hybrid) plan_hybrid(p);
  p.gather = opt.attention == "gather";
  if (!p.gather && !p.hybrid && !p.tk) plan_blocks(p);
  last_attention = p.tk       ? "tree_kernel"
                   : p.hybrid ? "hybrid"
                   : p.gather ? "gather"
                   : opt.attention == "dense" || (p.blocks.size() == 1 && p.blocks[0].span == in.num_slots) ? "dense"
                                                                                                            : "blocks";
  // What a LibTorch failure below was allocating (forward() names it): the
  // largest attention tensor of this step, scores [heads, rows, columns].
  step_rows = p.q;
  step_cols = p.tk ? 0 : p.hybrid ? p.P + p.L2 : p.gather ? p.longest : 0;
  for (const auto& bl : p.blocks)
    if (bl.n * bl.span > step_rows * step_cols) step_rows = bl.n, step_cols = bl.span;
  if (p.gather) plan_gather(p);
  return p;
}

// "auto" with the tree kernel registered: a step whose "auto" blocks all hold
// at least kDenseBlockMinRows queries (a prefill: one causal block per prompt
// copy) is scored by dense blocks, a few large matrix products; a decode or
// verification step (a few queries per key set, which the kernel's cascade
// serves) goes through the tree kernel.
bool TorchTransformer::Impl::prefill_shaped(const Plan& p) {
  for (const Block& bl : blocks_auto(p.rows))
    if (bl.n < kDenseBlockMinRows) return false;
  return true;
}

// Hybrid: each query's own slots >= P, padded to the longest.
void TorchTransformer::Impl::plan_hybrid(Plan& p) const {
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t P = p.P;
  for (auto& row : p.rows) p.L2 = std::max<int64_t>(p.L2, static_cast<int64_t>(row.size()) - P);
  const int64_t L2 = p.L2;
  p.hadd.assign(static_cast<size_t>(p.q * L2), ninf);
  p.hidx.assign(static_cast<size_t>(p.q * L2), P - 1);
  for (int64_t r = 0; r < p.q; ++r) {
    const auto& row = p.rows[static_cast<size_t>(r)];
    for (int64_t k = P; k < static_cast<int64_t>(row.size()); ++k) {
      p.hadd[static_cast<size_t>(r * L2 + k - P)] = 0.0f;
      p.hidx[static_cast<size_t>(r * L2 + k - P)] = row[static_cast<size_t>(k)];
    }
  }
}

// Dense blocks: runs of consecutive queries, each scored against the slot
// span [lo, lo + span) covering their rows. "dense": a block per run of
// queries whose spans overlap; "auto" starts a new block when merging would
// more than double the scored cells (+4096), so the batch layout's
// block-diagonal rows cost b x (prompt + t), not (b x (prompt + t))^2, while
// a trie step stays one block.
void TorchTransformer::Impl::plan_blocks(Plan& p) const {
  p.blocks = opt.attention == "dense" ? blocks_overlapping(p.rows) : blocks_auto(p.rows);
  const float ninf = -std::numeric_limits<float>::infinity();
  for (auto& bl : p.blocks) {
    bl.add.assign(static_cast<size_t>(bl.n * bl.span), ninf);
    for (int64_t r = 0; r < bl.n; ++r)
      for (int64_t s : p.rows[static_cast<size_t>(bl.q0 + r)]) bl.add[static_cast<size_t>(r * bl.span + s - bl.lo)] = 0.0f;
  }
}

// A dense block per run of consecutive queries whose slot spans overlap: one
// beam of the batch layout, or the whole trie. The mask and scores grow with
// one beam's rows x its span, never with all rows x all slots ((b x P)^2 for
// a batch prefill).
std::vector<TorchTransformer::Impl::Block> TorchTransformer::Impl::blocks_overlapping(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<Block> blocks;
  int64_t hi = 0;
  for (int64_t r = 0; r < static_cast<int64_t>(rows.size()); ++r) {
    const auto& row = rows[static_cast<size_t>(r)];
    const int64_t rlo = row.front(), rhi = row.back() + 1;
    if (!blocks.empty() && rlo < hi && rhi > blocks.back().lo) {
      blocks.back().lo = std::min(blocks.back().lo, rlo);
      hi = std::max(hi, rhi);
      ++blocks.back().n;
      continue;
    }
    if (!blocks.empty()) blocks.back().span = hi - blocks.back().lo;
    blocks.push_back({r, 1, rlo, 0, {}});
    hi = rhi;
  }
  blocks.back().span = hi - blocks.back().lo;
  return blocks;
}

// "auto"'s blocks: a query joins the current block unless that would more
// than double the block's scored cells (+4096).
std::vector<TorchTransformer::Impl::Block> TorchTransformer::Impl::blocks_auto(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<Block> blocks;
  int64_t lo = 0, hi = 0, own = 0;  // current block's span and the sum of its rows' own spans
  for (int64_t r = 0; r < static_cast<int64_t>(rows.size()); ++r) {
    const auto& row = rows[static_cast<size_t>(r)];
    const int64_t rlo = row.front(), rhi = row.back() + 1;
    if (!blocks.empty()) {
      const int64_t mlo = std::min(lo, rlo), mhi = std::max(hi, rhi);
      if ((blocks.back().n + 1) * (mhi - mlo) <= 2 * (own + rhi - rlo) + 4096) {
        lo = mlo;
        hi = mhi;
        own += rhi - rlo;
        ++blocks.back().n;
        continue;
      }
      blocks.back().lo = lo;
      blocks.back().span = hi - lo;
    }
    blocks.push_back({r, 1, 0, 0, {}});
    lo = rlo;
    hi = rhi;
    own = rhi - rlo;
  }
  blocks.back().lo = lo;
  blocks.back().span = hi - lo;
  return blocks;
}

// Gather: each query's slots, padded to the longest row.
void TorchTransformer::Impl::plan_gather(Plan& p) const {
  const int64_t L = p.longest;
  p.gadd.assign(static_cast<size_t>(p.q * L), -std::numeric_limits<float>::infinity());
  p.gather_idx.assign(static_cast<size_t>(p.q * L), 0);
  for (int64_t r = 0; r < p.q; ++r) {
    const auto& row = p.rows[static_cast<size_t>(r)];
    for (size_t k = 0; k < row.size(); ++k) {
      p.gadd[static_cast<size_t>(r * L) + k] = 0.0f;
      p.gather_idx[static_cast<size_t>(r * L) + k] = row[k];
    }
  }
}

// The step's tokens, slots, masks and RoPE tables on the device.
TorchTransformer::Impl::Inputs TorchTransformer::Impl::upload(const StepInput& in, const Plan& p) const {
  Inputs t;
  const int64_t q = p.q;
  const auto fopt = at::TensorOptions().dtype(at::kFloat);
  std::vector<int64_t> tok64(in.tokens.begin(), in.tokens.end()), slot64(in.slots.begin(), in.slots.end());
  std::vector<float> posf(in.positions.begin(), in.positions.end());
  t.tok = long_tensor(tok64, dev);
  t.slots = long_tensor(slot64, dev);
  if (!in.logits_rows.empty()) t.logits_rows = long_tensor(std::vector<int64_t>(in.logits_rows.begin(), in.logits_rows.end()), dev);
  const at::Tensor pos = at::from_blob(posf.data(), {q}, fopt).clone().to(dev);
  if (p.gather) {
    t.mask = at::from_blob(const_cast<float*>(p.gadd.data()), {q, p.longest}, fopt).clone().to(dev);
    t.gidx = long_tensor(p.gather_idx, dev);
  }
  if (p.hybrid && p.L2 > 0) {
    t.hmask = at::from_blob(const_cast<float*>(p.hadd.data()), {q, p.L2}, fopt).clone().to(dev);
    t.hgidx = long_tensor(p.hidx, dev);
  }
  t.kernel = p.tk ? device_kernel() : nullptr;  // null: the CPU twin
  if (p.tk) setup_tree_kernel(p, t);
  for (const auto& bl : p.blocks)
    t.block_mask.push_back(at::from_blob(const_cast<float*>(bl.add.data()), {bl.n, bl.span}, fopt).clone().to(dev));
  // RoPE from the explicit position ids: angle = position x inv_freq.
  const at::Tensor freqs = pos.unsqueeze(1) * inv_freq.unsqueeze(0);  // [q, hd/2]
  const at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);   // [q, 1, hd]
  t.cos = emb.cos().to(dt);  // computed in fp32, applied in the compute dtype (HF's rotary embedding)
  const at::Tensor sin = emb.sin().to(dt);
  const int64_t h = sin.size(-1) / 2;
  t.sin_signed = at::cat({-sin.narrow(-1, 0, h), sin.narrow(-1, h, h)}, -1);
  return t;
}

// Tree kernel: each query's allowed slots as one CSR list (the rows read
// above, ascending), uploaded once and shared by every layer, with the
// kernel's cascade, workspace and status.
void TorchTransformer::Impl::setup_tree_kernel(const Plan& p, Inputs& t) const {
  const LlamaConfig& c = cfg;
  const int64_t q = p.q;
  TreeAttentionArgs& targs = t.targs;
  t.csr_ptr.reserve(static_cast<size_t>(q) + 1);
  t.csr_ptr.push_back(0);
  for (const auto& row : p.rows) {
    for (int64_t s : row) t.csr_ids.push_back(static_cast<int32_t>(s));
    t.csr_ptr.push_back(static_cast<int32_t>(t.csr_ids.size()));
  }
  const auto iopt = at::TensorOptions().dtype(at::kInt);
  t.tk_ptr = at::from_blob(t.csr_ptr.data(), {q + 1}, iopt).clone().to(dev);
  t.tk_ids = at::from_blob(t.csr_ids.data(), {static_cast<int64_t>(t.csr_ids.size())}, iopt).clone().to(dev);
  targs.indptr = t.tk_ptr.data_ptr<int32_t>();
  targs.slot_ids = t.tk_ids.data_ptr<int32_t>();
  targs.num_queries = static_cast<int32_t>(q);
  targs.heads = c.num_attention_heads;
  targs.kv_heads = c.num_key_value_heads;
  targs.head_dim = c.head_dim;
  targs.capacity = static_cast<int32_t>(capacity);
  targs.max_row = static_cast<int32_t>(p.longest);
  targs.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  if (!t.kernel) return;
  // The cascade over the trie's shared segments, planned here once for
  // every layer (none for a prefill or the batch layout).
  targs.indptr = t.csr_ptr.data();
  targs.slot_ids = t.csr_ids.data();
  t.cascade = tree_attention_cascade_build(targs, tree_attention_cascade_tile_rows(c.head_dim));
  targs.indptr = t.tk_ptr.data_ptr<int32_t>();
  targs.slot_ids = t.tk_ids.data_ptr<int32_t>();
  if (t.cascade.items > 0) {
    t.tk_cascade = at::from_blob(t.cascade.table.data(), {static_cast<int64_t>(t.cascade.table.size())}, iopt).clone().to(dev);
    targs.cascade = t.cascade.view(t.tk_cascade.data_ptr<int32_t>());
  }
  targs.workspace_bytes = t.kernel->workspace_bytes(targs);  // the same for every layer
  if (targs.workspace_bytes > 0) {
    t.tk_work = at::empty({static_cast<int64_t>(targs.workspace_bytes)}, at::TensorOptions().dtype(at::kByte).device(dev));
    targs.workspace = t.tk_work.data_ptr();
  }
  t.tk_status = at::zeros({3}, iopt.device(dev));  // KernelStatus: code, index, value
  targs.status = t.tk_status.data_ptr<int32_t>();
}

// One decoder layer: attention over the cache (this step's K/V written
// first), then the MLP, each with its residual.
at::Tensor TorchTransformer::Impl::layer_forward(size_t l, const at::Tensor& x_in, const Plan& p, const Inputs& t) {
  const LlamaConfig& c = cfg;
  const int64_t q = p.q, nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const auto& W = layers[l];
  const at::Tensor h = rms_norm(x_in, W.in_norm);
  at::Tensor qh = linear2d(h, W.wq, W.bq).view({q, nh, hd});
  at::Tensor kh = linear2d(h, W.wk, W.bk).view({q, nkv, hd});
  const at::Tensor vh = linear2d(h, W.wv, W.bv).view({q, nkv, hd});
  qh = Impl::rope(qh, t.cos, t.sin_signed);
  kh = Impl::rope(kh, t.cos, t.sin_signed);
  at::Tensor K = kv[l].select(0, 0), V = kv[l].select(0, 1);  // [capacity, nkv, hd] views
  K.index_copy_(0, t.slots, kh);
  V.index_copy_(0, t.slots, vh);
  const at::Tensor attn = p.tk       ? attend_tree_kernel(l, qh, p, t)
                          : p.hybrid ? attend_hybrid(qh, K, V, p, t)
                          : !p.gather ? attend_blocks(qh, K, V, p, t)
                                      : attend_gather(qh, K, V, p, t);
  at::Tensor x = x_in + linear2d(attn, W.wo, W.bo);
  const at::Tensor h2 = rms_norm(x, W.post_norm);
  x = x + linear2d(at::silu(linear2d(h2, W.wg, {})) * linear2d(h2, W.wu, {}), W.wd, {});
  return x;
}

// One call per layer over the raw cache: K/V of this step were written
// just before; the kernel (or its CPU twin) reads each query's list only.
at::Tensor TorchTransformer::Impl::attend_tree_kernel(size_t l, const at::Tensor& qh, const Plan& p, const Inputs& t) const {
  const int64_t q = p.q, nh = cfg.num_attention_heads, hd = cfg.head_dim;
  const at::Tensor qc = qh.contiguous();
  const at::Tensor o = at::empty({q, nh, hd}, at::TensorOptions().dtype(at::kFloat).device(dev));
  TS_CHECK(kv[l].is_contiguous(), "transformer: tree attention needs a contiguous cache");
  TreeAttentionArgs a = t.targs;
  a.q = qc.data_ptr<float>();
  a.kv = kv[l].data_ptr<float>();
  a.out = o.data_ptr<float>();
  if (t.kernel) t.kernel->launch(a);  // on the legacy default stream, LibTorch's default current stream
  else tree_attention_host(a);
  return o.view({q, nh * hd});
}

// Hybrid: all q queries against the P shared slots densely, one matmul per
// KV head, plus each query against its own slots >= P only.
at::Tensor TorchTransformer::Impl::attend_hybrid(const at::Tensor& qh, const at::Tensor& K, const at::Tensor& V, const Plan& p,
                                                 const Inputs& t) const {
  const int64_t q = p.q, P = p.P, L2 = p.L2;
  const int64_t nh = cfg.num_attention_heads, nkv = cfg.num_key_value_heads, hd = cfg.head_dim, g = nh / nkv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const at::Tensor Qb = qh.view({q, nkv, g, hd}).permute({1, 2, 0, 3}).reshape({nkv, g * q, hd});
  const at::Tensor sp =
      scores_fp32(at::matmul(Qb, K.narrow(0, 0, P).permute({1, 2, 0}))).mul_(scale).view({nkv, g, q, P}).permute({2, 0, 1, 3});
  at::Tensor sc = sp;  // [q, nkv, g, P (+ L2)]
  at::Tensor Vg;
  if (L2 > 0) {  // sparse part: each query against its own slots >= P only
    const at::Tensor Kg = K.index_select(0, t.hgidx).view({q, L2, nkv, hd}).permute({0, 2, 3, 1});  // [q, nkv, hd, L2]
    Vg = V.index_select(0, t.hgidx).view({q, L2, nkv, hd}).permute({0, 2, 1, 3});                    // [q, nkv, L2, hd]
    const at::Tensor sd = scores_fp32(at::matmul(qh.view({q, nkv, g, hd}), Kg)).mul_(scale) + t.hmask.view({q, 1, 1, L2});
    sc = at::cat({sp, sd}, -1);
  }
  const at::Tensor pr = softmax_probs(sc);
  const at::Tensor pp = pr.narrow(-1, 0, P).permute({1, 2, 0, 3}).reshape({nkv, g * q, P});
  at::Tensor o = at::matmul(pp, V.narrow(0, 0, P).permute({1, 0, 2})).view({nkv, g, q, hd}).permute({2, 0, 1, 3});
  if (L2 > 0) o = o + at::matmul(pr.narrow(-1, P, L2), Vg);
  return o.reshape({q, nh * hd});
}

// Dense blocks: each block's queries against its slot span.
at::Tensor TorchTransformer::Impl::attend_blocks(const at::Tensor& qh, const at::Tensor& K, const at::Tensor& V, const Plan& p,
                                                 const Inputs& t) const {
  const int64_t nh = cfg.num_attention_heads, nkv = cfg.num_key_value_heads, hd = cfg.head_dim, g = nh / nkv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<at::Tensor> parts;
  for (size_t bi = 0; bi < p.blocks.size(); ++bi) {
    const int64_t n = p.blocks[bi].n, lo = p.blocks[bi].lo, sp = p.blocks[bi].span;
    // GQA: query head j reads KV head j / g.
    const at::Tensor Q = qh.narrow(0, p.blocks[bi].q0, n).view({n, nkv, g, hd}).permute({1, 2, 0, 3}).reshape({nkv, g * n, hd});
    const at::Tensor Kt = K.narrow(0, lo, sp).permute({1, 2, 0});  // [nkv, hd, span]
    at::Tensor sc = scores_fp32(at::matmul(Q, Kt)).mul_(scale).view({nkv, g, n, sp}) + t.block_mask[bi];
    const at::Tensor pr = softmax_probs(sc).view({nkv, g * n, sp});
    const at::Tensor Vs = V.narrow(0, lo, sp).permute({1, 0, 2});  // [nkv, span, hd]
    parts.push_back(at::matmul(pr, Vs).view({nkv, g, n, hd}).permute({2, 0, 1, 3}).reshape({n, nh * hd}));
  }
  return parts.size() == 1 ? parts[0] : at::cat(parts, 0);
}

// Gather: each query against its own gathered slots, in query chunks so the
// gathered K/V stay within ~16M floats each (a batch prefill gathers
// b x prompt rows of prompt slots).
at::Tensor TorchTransformer::Impl::attend_gather(const at::Tensor& qh, const at::Tensor& K, const at::Tensor& V, const Plan& p,
                                                 const Inputs& t) const {
  const int64_t q = p.q, L = p.longest;
  const int64_t nh = cfg.num_attention_heads, nkv = cfg.num_key_value_heads, hd = cfg.head_dim, g = nh / nkv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(1, L * nkv * hd));
  std::vector<at::Tensor> parts;
  for (int64_t q0 = 0; q0 < q; q0 += chunk) {
    const int64_t qn = std::min(chunk, q - q0);
    const at::Tensor gi = t.gidx.narrow(0, q0 * L, qn * L);
    const at::Tensor Kg = K.index_select(0, gi).view({qn, L, nkv, hd}).permute({0, 2, 3, 1});  // [qn, nkv, hd, L]
    const at::Tensor Vg = V.index_select(0, gi).view({qn, L, nkv, hd}).permute({0, 2, 1, 3});  // [qn, nkv, L, hd]
    const at::Tensor Q = qh.narrow(0, q0, qn).view({qn, nkv, g, hd});
    at::Tensor sc = scores_fp32(at::matmul(Q, Kg)).mul_(scale) + t.mask.narrow(0, q0, qn).view({qn, 1, 1, L});  // [qn, nkv, g, L]
    parts.push_back(at::matmul(softmax_probs(sc), Vg).reshape({qn, nh * hd}));
  }
  return parts.size() == 1 ? parts[0] : at::cat(parts, 0);
}

// A LibTorch failure (out of memory, or any other c10::Error) becomes a named
// Error: what the step was allocating and which option changes it, the
// LibTorch message without its backtrace.
void TorchTransformer::forward(const StepInput& in, Logits& out) {
  Impl& m = *impl_;
  try {
    m.forward(in, out);
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    const std::string first = msg.substr(0, msg.find('\n'));
    const LlamaConfig& c = m.cfg;
    const double kv_mib = 2.0 * c.num_hidden_layers * static_cast<double>(std::max(m.capacity, m.step_slots)) * c.num_key_value_heads *
                          c.head_dim * static_cast<double>(at::elementSize(m.dt)) / (1 << 20);
    std::ostringstream what;
    if (m.step_rows > 0 && m.step_cols > 0)
      what << "attention \"" << m.opt.attention << "\" (path " << m.last_attention << ") scores of " << m.step_rows << " queries x "
           << m.step_cols << " slots x " << c.num_attention_heads << " heads ("
           << static_cast<double>(m.step_rows) * static_cast<double>(m.step_cols) * c.num_attention_heads * sizeof(float) / (1 << 20)
           << " MiB)";
    else
      what << "a step of " << in.tokens.size() << " queries over a KV cache of " << m.step_slots << " slots (" << kv_mib << " MiB)";
    TS_FAIL("transformer on " << m.opt.device << ": LibTorch failed while computing " << what.str()
                              << "; lower the beams or the prompt, or use attention \"tree_kernel\" or \"auto\" (LibTorch: " << first
                              << ")");
  }
}

nlohmann::json TorchTransformer::describe() const {
  nlohmann::json j = {{"type", "transformer"},
                      {"config", impl_->cfg.to_json()},
                      {"device", impl_->opt.device},
                      {"attention", impl_->opt.attention},
                      {"dtype", impl_->opt.dtype}};
  if (!impl_->opt.source.is_null()) j["source"] = impl_->opt.source;
  if (impl_->tokenizer) j["tokenizer"] = {{"type", "byte-level BPE"}, {"pre_tokenizer", impl_->tokenizer->pretokenizer()}};
  return j;
}

std::vector<std::string> TorchTransformer::vocab_strings() const {
  if (!impl_->tokenizer) return {};
  std::vector<std::string> v(static_cast<size_t>(impl_->cfg.vocab_size));
  for (int32_t i = 0; i < impl_->cfg.vocab_size; ++i) v[static_cast<size_t>(i)] = impl_->tokenizer->token_display(i);
  return v;
}

std::unique_ptr<TorchTransformer> TorchTransformer::load_dir(const std::string& dir, TransformerOptions opt) {
  namespace fs = std::filesystem;
  const LlamaConfig cfg = llama_config_load((fs::path(dir) / "config.json").string());
  const TensorMap w = safetensors_read_dir(dir);
  llama_weights_check(cfg, w, fs::exists(fs::path(dir) / "model.safetensors") ? (fs::path(dir) / "model.safetensors").string()
                                                                              : (fs::path(dir) / "model.safetensors.index.json").string());
  if (opt.source.is_null()) opt.source = {{"path", dir}};
  auto m = std::make_unique<TorchTransformer>(cfg, w, std::move(opt));
  const fs::path tok = fs::path(dir) / "tokenizer.json";
  if (fs::exists(tok)) m->set_tokenizer(std::make_shared<BpeTokenizer>(BpeTokenizer::load(tok.string())));
  return m;
}

std::unique_ptr<TorchTransformer> TorchTransformer::load_gguf(const std::string& path, TransformerOptions opt) {
  GgufLlama g = gguf_llama_load(path);
  if (opt.source.is_null()) opt.source = {{"path", path}, {"format", "gguf"}};
  auto m = std::make_unique<TorchTransformer>(g.config, g.weights, std::move(opt));
  if (g.tokenizer) m->set_tokenizer(std::move(g.tokenizer));
  return m;
}

}  // namespace triescope
