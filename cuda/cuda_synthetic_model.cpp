#include "cuda/cuda_synthetic_model.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "core/model/decode_buckets.h"

#include "cuda/cuda_common.cuh"
#include "cuda/kv_compact.cuh"
#include "cuda/synthetic_logits.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

// What a captured decode forward baked in: its bucket, the cache's
// capacity, and the buffers it reads and writes.
struct GraphKey {
  int32_t bucket = 0;
  int32_t capacity = 0;
  std::array<const void*, 5> buffers{};
  auto operator<=>(const GraphKey&) const = default;
};

struct CudaSyntheticModel::Device {
  cudaStream_t stream = nullptr;
  int32_t capacity = 0;                // slots held by kv_tokens / kv_positions
  DeviceBuffer<int32_t> kv_tokens;     // [capacity] token per slot, -1: empty
  DeviceBuffer<int32_t> kv_positions;  // [capacity]
  DeviceBuffer<int32_t> spare_tokens;  // [capacity] compaction target, swapped in
  DeviceBuffer<int32_t> spare_positions;
  DeviceBuffer<int32_t> step_ints;     // [2 + 3 x rows] q, num_slots | tokens | positions | slots (rows: q, or the bucket)
  DeviceBuffer<uint64_t> mask;         // [rows x words a row]
  DeviceBuffer<float> logits;          // [rows x vocab]
  DeviceBuffer<int32_t> plan_src;      // [new_num_slots]
  DeviceBuffer<KernelStatus> status;   // [1]
  std::map<GraphKey, cudaGraphExec_t> graphs;  // the decode forward captured, per bucket and buffers

  void drop_graphs() {
    for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
    graphs.clear();
  }
  ~Device() {
    drop_graphs();
    if (stream) cudaStreamDestroy(stream);
  }
};

CudaSyntheticModel::CudaSyntheticModel(SyntheticConfig cfg)
    : cfg_(cfg), description_(SyntheticModel(cfg).describe()) /* validates cfg too */, dev_(std::make_unique<Device>()) {
  require_device("cuda backend");
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

// Grows the device cache by doubling to hold num_slots; new slots are
// empty (-1), old ones keep their pairs.
void CudaSyntheticModel::grow_cache(int32_t num_slots) {
  Device& d = *dev_;
  if (num_slots <= d.capacity) return;
  int32_t cap = std::max(d.capacity, 256);
  while (cap < num_slots) cap *= 2;
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
  d.drop_graphs();  // they name the old buffers
}

void CudaSyntheticModel::forward(const StepInput& in, Logits& out) {
  step_input_check(in, cfg_.vocab_size);
  Device& d = *dev_;
  const int32_t q = static_cast<int32_t>(in.tokens.size());
  const int32_t V = cfg_.vocab_size;
  grow_cache(in.num_slots);
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
  if (in.mask_device.rows)  // the builder's stream wrote them: this stream waits for it, the host does not
    TS_CUDA_CHECK(cudaStreamWaitEvent(d.stream, static_cast<cudaEvent_t>(in.mask_device.ready)), "cuda synthetic model: wait for the mask rows");
  // A decode step (its logits stay for the selector) replays the graph of
  // its bucket; the prefill and host-logits forwards run eagerly.
  const int32_t bucket = stay ? decode_bucket(q) : 0;
  if (bucket > 0)
    forward_captured(in, bucket);
  else
    forward_eager(in);
  if (stay) {  // nothing to wait for: the selector reads the logits and this status back with its answer
    out.device = {d.logits.data(), d.stream, d.status.data(), in.mask_device.status};
    return;
  }
  TS_CUDA_CHECK(counted_download(out.data.data(), d.logits.data(), out.data.size() * sizeof(float), d.stream),
                "cuda synthetic model: download logits");
  status_check(d.status.data(), d.stream, "cuda synthetic model: forward");  // synchronises
  out.device = {d.logits.data(), d.stream, nullptr};
}

// Uploads [q, num_slots | tokens | positions | slots], each list padded to
// `rows` entries, and makes room for `rows` logits rows.
void CudaSyntheticModel::upload_step_ints(const StepInput& in, int32_t rows) {
  Device& d = *dev_;
  const auto q = static_cast<int32_t>(in.tokens.size());
  std::vector<int32_t> ints(2 + 3 * static_cast<size_t>(rows), 0);
  ints[0] = q;
  ints[1] = in.num_slots;
  std::copy(in.tokens.begin(), in.tokens.end(), ints.begin() + 2);
  std::copy(in.positions.begin(), in.positions.end(), ints.begin() + 2 + rows);
  std::copy(in.slots.begin(), in.slots.end(), ints.begin() + 2 + 2 * rows);
  d.step_ints.reserve_discard(ints.size(), "step inputs");
  d.logits.reserve_discard(static_cast<size_t>(rows) * static_cast<size_t>(cfg_.vocab_size), "logits");
  TS_CUDA_CHECK(cudaMemcpyAsync(d.step_ints.data(), ints.data(), ints.size() * sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
                "cuda synthetic model: upload sizes/tokens/positions/slots");
}

void CudaSyntheticModel::forward_eager(const StepInput& in) {
  Device& d = *dev_;
  const auto q = static_cast<int32_t>(in.tokens.size());
  upload_step_ints(in, q);
  const bool mask_on_device = in.mask_device.rows != nullptr;  // the builder's rows, read in place
  if (!mask_on_device) {
    d.mask.reserve_discard(std::max<size_t>(in.mask.words.size(), 1), "step mask");
    if (!in.mask.words.empty())
      TS_CUDA_CHECK(cudaMemcpyAsync(d.mask.data(), in.mask.words.data(), in.mask.words.size() * sizeof(uint64_t),
                                    cudaMemcpyHostToDevice, d.stream),
                    "cuda synthetic model: upload mask");
  }
  launch_forward(q, in.num_slots, mask_on_device ? in.mask_device.rows : d.mask.data(),
                 mask_on_device ? in.mask_device.words_per_row : in.mask.words_per_row, false);
}

// The K/V writes, then the logits: `rows` queries over `num_slots` slots, or,
// with `sizes_on_device`, shaped for them and reading the live counts from
// the uploaded step (a captured launch).
void CudaSyntheticModel::launch_forward(int32_t rows, int32_t num_slots, const uint64_t* mask, int32_t words_per_row, bool sizes_on_device) {
  Device& d = *dev_;
  const int32_t* sizes = sizes_on_device ? d.step_ints.data() : nullptr;
  const int32_t* ints = d.step_ints.data() + 2;
  // All writes first: queries of one forward may attend to each other.
  SyntheticKvWriteParams w;
  w.tokens = ints;
  w.positions = ints + rows;
  w.slots = ints + 2 * rows;
  w.num_queries = rows;
  w.kv_tokens = d.kv_tokens.data();
  w.kv_positions = d.kv_positions.data();
  w.num_slots = num_slots;
  w.maybe_sizes = sizes;
  w.maybe_status = d.status.data();
  synthetic_kv_write(w, d.stream);

  SyntheticLogitsParams lp;
  lp.cfg = cfg_;
  lp.kv_tokens = d.kv_tokens.data();
  lp.kv_positions = d.kv_positions.data();
  lp.num_slots = num_slots;
  lp.mask = mask;
  lp.words_per_row = words_per_row;
  lp.query_positions = ints + rows;
  lp.num_queries = rows;
  lp.maybe_out_logits = d.logits.data();
  lp.maybe_sizes = sizes;
  lp.maybe_status = d.status.data();
  synthetic_logits(lp, d.stream);
}

// The step padded to `bucket` queries, its mask rows copied into the
// model's own [bucket x cache-wide] buffer (zero past each row), then the
// bucket's graph replayed: captured the first time these buffers are seen.
void CudaSyntheticModel::forward_captured(const StepInput& in, int32_t bucket) {
  Device& d = *dev_;
  const auto q = static_cast<size_t>(in.tokens.size());
  upload_step_ints(in, bucket);
  const int32_t pitch = BitMask::words_for(d.capacity);  // words a row in the model's buffer
  const bool mask_on_device = in.mask_device.rows != nullptr;
  const int32_t words = mask_on_device ? in.mask_device.words_per_row : in.mask.words_per_row;
  d.mask.reserve_discard(static_cast<size_t>(bucket) * static_cast<size_t>(pitch), "step mask");
  TS_CUDA_CHECK(cudaMemsetAsync(d.mask.data(), 0, static_cast<size_t>(bucket) * static_cast<size_t>(pitch) * sizeof(uint64_t), d.stream),
                "cuda synthetic model: clear the bucket's mask");
  const void* src = mask_on_device ? static_cast<const void*>(in.mask_device.rows) : static_cast<const void*>(in.mask.words.data());
  TS_CUDA_CHECK(cudaMemcpy2DAsync(d.mask.data(), static_cast<size_t>(pitch) * sizeof(uint64_t), src, static_cast<size_t>(words) * sizeof(uint64_t),
                                  static_cast<size_t>(words) * sizeof(uint64_t), q, mask_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                  d.stream),
                "cuda synthetic model: copy the mask rows");
  const GraphKey key{bucket, d.capacity, {d.kv_tokens.data(), d.kv_positions.data(), d.mask.data(), d.logits.data(), d.step_ints.data()}};
  auto it = d.graphs.find(key);
  if (it == d.graphs.end()) {
    it = d.graphs.emplace(key, graph_capture(d.stream, [&] { launch_forward(bucket, d.capacity, d.mask.data(), pitch, true); },
                                             "cuda synthetic model"))
             .first;
    ++captured_.captures;
  }
  TS_CUDA_CHECK(cudaGraphLaunch(it->second, d.stream), "cuda synthetic model: graph launch");
  ++captured_.replays_by_bucket[bucket];
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
  // No wait: the gather's status stays in the model's status, read with the
  // next forward's (by its status_check, or with the selector's answer).
  d.kv_tokens.swap(t);
  d.kv_positions.swap(p);
  if (cap > d.capacity) {
    d.spare_tokens.resize_discard(static_cast<size_t>(cap), "kv tokens (spare)");
    d.spare_positions.resize_discard(static_cast<size_t>(cap), "kv positions (spare)");
    d.capacity = cap;
    d.drop_graphs();  // they name the old buffers
  } else {
    d.spare_tokens.swap(t);  // the old cache becomes the next spare
    d.spare_positions.swap(p);
  }
}

}  // namespace triescope::cuda
