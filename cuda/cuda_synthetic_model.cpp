#include "cuda/cuda_synthetic_model.h"

#include <algorithm>
#include <cstring>

#include "cuda/cuda_common.cuh"
#include "cuda/kv_compact.cuh"
#include "cuda/synthetic_logits.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

struct CudaSyntheticModel::Device {
  cudaStream_t stream = nullptr;
  int32_t capacity = 0;                // slots held by kv_tokens / kv_positions
  DeviceBuffer<int32_t> kv_tokens;     // [capacity] token per slot, -1: empty
  DeviceBuffer<int32_t> kv_positions;  // [capacity]
  DeviceBuffer<int32_t> spare_tokens;  // [capacity] compaction target, swapped in
  DeviceBuffer<int32_t> spare_positions;
  DeviceBuffer<int32_t> step_ints;     // [3 x num_queries] tokens | positions | slots
  DeviceBuffer<uint64_t> mask;         // [num_queries x words_per_row]
  DeviceBuffer<float> logits;          // [num_queries x vocab]
  DeviceBuffer<int32_t> plan_src;      // [new_num_slots]
  DeviceBuffer<KernelStatus> status;   // [1]

  ~Device() {
    if (stream) cudaStreamDestroy(stream);
  }
};

SyntheticLogitsConfig synthetic_logits_config(const SyntheticConfig& c) {
  SyntheticLogitsConfig d;
  d.vocab_size = c.vocab_size;
  d.seed = c.seed;
  d.peakiness_q8 = c.peakiness_q8;
  d.repetitiveness_q8 = c.repetitiveness_q8;
  d.ngram = c.ngram;
  d.eos_token = c.eos_token;
  d.eos_per_million = c.eos_per_million;
  d.perturb_seed = c.perturb_seed;
  d.perturb_q8 = c.perturb_q8;
  return d;
}

CudaSyntheticModel::CudaSyntheticModel(SyntheticConfig cfg)
    : cfg_(cfg), description_(SyntheticModel(cfg).describe()) /* validates cfg too */, dev_(std::make_unique<Device>()) {
  std::string why;
  TS_CHECK(device_count(&why) > 0, "cuda backend: no usable CUDA device (" << why << ")");
  TS_CUDA_CHECK(cudaStreamCreateWithFlags(&dev_->stream, cudaStreamNonBlocking), "cuda synthetic model: create stream");
  dev_->status.resize_discard(1, "kernel status");
  TS_CUDA_CHECK(cudaMemsetAsync(dev_->status.data(), 0, sizeof(KernelStatus), dev_->stream), "cuda synthetic model: clear status");
  TS_CUDA_CHECK(counted_stream_sync(dev_->stream), "cuda synthetic model: init");
}

CudaSyntheticModel::~CudaSyntheticModel() = default;

int32_t CudaSyntheticModel::capacity_slots() const { return dev_->capacity; }

void CudaSyntheticModel::reset() {
  Device& d = *dev_;
  if (d.capacity == 0) return;
  TS_CUDA_CHECK(cudaMemsetAsync(d.kv_tokens.data(), 0xff, d.kv_tokens.bytes(), d.stream), "cuda synthetic model: reset");
  TS_CUDA_CHECK(counted_stream_sync(d.stream), "cuda synthetic model: reset");
}

void CudaSyntheticModel::forward(const StepInput& in, Logits& out) {
  step_input_check(in, cfg_.vocab_size);
  Device& d = *dev_;
  const int32_t q = static_cast<int32_t>(in.tokens.size());
  const int32_t V = cfg_.vocab_size;
  if (in.num_slots > d.capacity) {
    // Grow by doubling; new slots are empty (-1), old ones keep their pairs.
    int32_t cap = std::max(d.capacity, 256);
    while (cap < in.num_slots) cap *= 2;
    DeviceBuffer<int32_t> t(static_cast<size_t>(cap), "kv tokens"), p(static_cast<size_t>(cap), "kv positions");
    TS_CUDA_CHECK(cudaMemsetAsync(t.data(), 0xff, t.bytes(), d.stream), "cuda synthetic model: clear kv tokens");
    TS_CUDA_CHECK(cudaMemsetAsync(p.data(), 0xff, p.bytes(), d.stream), "cuda synthetic model: clear kv positions");
    if (d.capacity > 0) {
      const size_t bytes = static_cast<size_t>(d.capacity) * sizeof(int32_t);
      TS_CUDA_CHECK(cudaMemcpyAsync(t.data(), d.kv_tokens.data(), bytes, cudaMemcpyDeviceToDevice, d.stream), "cuda synthetic model: grow kv tokens");
      TS_CUDA_CHECK(cudaMemcpyAsync(p.data(), d.kv_positions.data(), bytes, cudaMemcpyDeviceToDevice, d.stream), "cuda synthetic model: grow kv positions");
    }
    TS_CUDA_CHECK(counted_stream_sync(d.stream), "cuda synthetic model: grow kv cache");
    d.kv_tokens.swap(t);
    d.kv_positions.swap(p);
    d.spare_tokens.resize_discard(static_cast<size_t>(cap), "kv tokens (spare)");
    d.spare_positions.resize_discard(static_cast<size_t>(cap), "kv positions (spare)");
    d.capacity = cap;
  }
  const bool stay = in.logits_may_stay_on_device;  // the caller's device selector reads them in place
  if (stay) {
    out.rows = q;
    out.vocab = V;
    out.data.clear();
    out.device = {};
  } else {
    out.resize(q, V);
  }
  if (q == 0) return;

  std::vector<int32_t> ints(static_cast<size_t>(3 * q));
  std::copy(in.tokens.begin(), in.tokens.end(), ints.begin());
  std::copy(in.positions.begin(), in.positions.end(), ints.begin() + q);
  std::copy(in.slots.begin(), in.slots.end(), ints.begin() + 2 * q);
  d.step_ints.reserve_discard(ints.size(), "step inputs");
  d.mask.reserve_discard(std::max<size_t>(in.mask.words.size(), 1), "step mask");
  d.logits.reserve_discard(static_cast<size_t>(q) * static_cast<size_t>(V), "logits");
  TS_CUDA_CHECK(cudaMemcpyAsync(d.step_ints.data(), ints.data(), ints.size() * sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
                "cuda synthetic model: upload tokens/positions/slots");
  if (!in.mask.words.empty())
    TS_CUDA_CHECK(cudaMemcpyAsync(d.mask.data(), in.mask.words.data(), in.mask.words.size() * sizeof(uint64_t),
                                  cudaMemcpyHostToDevice, d.stream),
                  "cuda synthetic model: upload mask");

  // All writes first: queries of one forward may attend to each other.
  SyntheticKvWriteParams w;
  w.tokens = d.step_ints.data();
  w.positions = d.step_ints.data() + q;
  w.slots = d.step_ints.data() + 2 * q;
  w.num_queries = q;
  w.kv_tokens = d.kv_tokens.data();
  w.kv_positions = d.kv_positions.data();
  w.num_slots = in.num_slots;
  w.maybe_status = d.status.data();
  synthetic_kv_write(w, d.stream);

  SyntheticLogitsParams lp;
  lp.cfg = synthetic_logits_config(cfg_);
  lp.kv_tokens = d.kv_tokens.data();
  lp.kv_positions = d.kv_positions.data();
  lp.num_slots = in.num_slots;
  lp.mask = d.mask.data();
  lp.words_per_row = in.mask.words_per_row;
  lp.query_positions = d.step_ints.data() + q;
  lp.num_queries = q;
  lp.maybe_out_logits = d.logits.data();
  lp.maybe_status = d.status.data();
  synthetic_logits(lp, d.stream);

  if (stay) {  // nothing to wait for: the selector reads the logits and this status back with its answer
    out.device = {d.logits.data(), d.stream, d.status.data()};
    return;
  }
  TS_CUDA_CHECK(counted_download(out.data.data(), d.logits.data(), out.data.size() * sizeof(float), d.stream),
                "cuda synthetic model: download logits");
  status_check(d.status.data(), d.stream, "cuda synthetic model: forward");  // synchronises
  out.device = {d.logits.data(), d.stream, nullptr};
}

void CudaSyntheticModel::compact(const CompactionPlan& plan) {
  Device& d = *dev_;
  for (size_t i = 0; i < plan.src.size(); ++i)
    TS_CHECK(plan.src[i] >= 0 && plan.src[i] < plan.old_num_slots && plan.src[i] < d.capacity,
             "cuda synthetic model: compaction plan.src[" << i << "] = " << plan.src[i] << " outside the cache's "
                                                         << std::min(plan.old_num_slots, d.capacity) << " slots");
  const int32_t n = plan.new_num_slots();
  const int32_t cap = std::max(d.capacity, n);
  if (cap == 0) return;
  DeviceBuffer<int32_t> t, p;
  if (cap > d.capacity) {  // a reorder plan may list more slots than the cache had
    t.resize_discard(static_cast<size_t>(cap), "kv tokens");
    p.resize_discard(static_cast<size_t>(cap), "kv positions");
  } else {
    t.swap(d.spare_tokens);
    p.swap(d.spare_positions);
  }
  // Slots past the plan are empty afterwards, as in the CPU model's shrunk vectors.
  TS_CUDA_CHECK(cudaMemsetAsync(t.data(), 0xff, t.bytes(), d.stream), "cuda synthetic model: clear compacted tokens");
  TS_CUDA_CHECK(cudaMemsetAsync(p.data(), 0xff, p.bytes(), d.stream), "cuda synthetic model: clear compacted positions");
  if (n > 0) {
    d.plan_src.reserve_discard(static_cast<size_t>(n), "compaction plan");
    TS_CUDA_CHECK(cudaMemcpyAsync(d.plan_src.data(), plan.src.data(), static_cast<size_t>(n) * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, d.stream),
                  "cuda synthetic model: upload compaction plan");
    for (int which = 0; which < 2; ++which) {
      KvCompactParams kp;
      kp.src = which == 0 ? d.kv_tokens.data() : d.kv_positions.data();
      kp.dst = which == 0 ? t.data() : p.data();
      kp.plan_src = d.plan_src.data();
      kp.new_num_slots = n;
      kp.old_num_slots = d.capacity;
      kp.row_bytes = sizeof(int32_t);
      kp.maybe_status = d.status.data();
      kv_compact(kp, d.stream);
    }
  }
  status_check(d.status.data(), d.stream, "cuda synthetic model: compact");
  d.kv_tokens.swap(t);
  d.kv_positions.swap(p);
  if (cap > d.capacity) {
    d.spare_tokens.resize_discard(static_cast<size_t>(cap), "kv tokens (spare)");
    d.spare_positions.resize_discard(static_cast<size_t>(cap), "kv positions (spare)");
    d.capacity = cap;
  } else {
    d.spare_tokens.swap(t);  // the old cache becomes the next spare
    d.spare_positions.swap(p);
  }
}

}  // namespace triescope::cuda
