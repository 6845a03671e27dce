#include "cuda/incremental_ancestor_mask.h"

#include <algorithm>

#include "core/common/error.h"
#include "cuda/ancestor_mask.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

struct IncrementalAncestorMask::Device {
  cudaStream_t stream = nullptr;
  DeviceBuffer<uint64_t> table;  // [rows x words] held rows
  DeviceBuffer<int32_t> plan;    // [4 x num_new] src_row | batch_parent | slot | dst_row
  DeviceBuffer<uint64_t> out;    // [num_new x out_words]
  DeviceBuffer<KernelStatus> status;
  cudaEvent_t ready = nullptr;  // recorded after each extend_on_device's kernel (DeviceMask::ready)
  ~Device() {
    if (ready) cudaEventDestroy(ready);
    if (stream) cudaStreamDestroy(stream);
  }
};

IncrementalAncestorMask::IncrementalAncestorMask() : dev_(std::make_unique<Device>()) {
  require_device("cuda incremental mask");
  TS_CUDA_CHECK(cudaStreamCreateWithFlags(&dev_->stream, cudaStreamNonBlocking), "cuda incremental mask: create stream");
  TS_CUDA_CHECK(cudaEventCreateWithFlags(&dev_->ready, cudaEventDisableTiming), "cuda incremental mask: create event");
  dev_->status.resize_discard(1, "kernel status");
  TS_CUDA_CHECK(cudaMemsetAsync(dev_->status.data(), 0, sizeof(KernelStatus), dev_->stream), "cuda incremental mask: clear status");
  reset();
}

IncrementalAncestorMask::~IncrementalAncestorMask() = default;

void IncrementalAncestorMask::reset(int32_t capacity_slots) {
  planner_.reset(capacity_slots);
  dev_->table.resize_discard(0);
  dev_rows_ = 0;
  dev_words_ = 0;
}

void IncrementalAncestorMask::resize_table(int32_t rows, int32_t words) {
  if (rows == dev_rows_ && words == dev_words_) return;
  DeviceBuffer<uint64_t> t(static_cast<size_t>(rows) * static_cast<size_t>(words), "mask table");
  TS_CUDA_CHECK(cudaMemsetAsync(t.data(), 0, t.bytes(), dev_->stream), "cuda incremental mask: clear table");
  if (dev_rows_ > 0)  // held rows keep their words; a wider row gets zero words past the old width
    TS_CUDA_CHECK(cudaMemcpy2DAsync(t.data(), static_cast<size_t>(words) * 8, dev_->table.data(), static_cast<size_t>(dev_words_) * 8,
                                    static_cast<size_t>(dev_words_) * 8, static_cast<size_t>(dev_rows_), cudaMemcpyDeviceToDevice,
                                    dev_->stream),
                  "cuda incremental mask: resize table");
  TS_CUDA_CHECK(counted_stream_sync(dev_->stream), "cuda incremental mask: resize table");
  dev_->table.swap(t);
  dev_rows_ = rows;
  dev_words_ = words;
}

// Plans the rows of `nodes` and, unless there are none (then false), enqueues
// the kernel that writes them into the device's `out` buffer
// ([n x words_per_row]); waits for nothing. The host vectors it
// uploads from may die on return: a copy from pageable memory is staged
// before cudaMemcpyAsync returns (the runtime API's synchronisation rules;
// the host runtime stages them too).
bool IncrementalAncestorMask::enqueue_extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots,
                                             int32_t words_per_row) {
  const MaskExtendPlan plan = planner_.plan_extend(tree, nodes, num_slots);
  const int32_t n = static_cast<int32_t>(nodes.size());
  if (n == 0) return false;
  TS_CHECK(plan.table_rows >= dev_rows_ && plan.table_words >= dev_words_, "cuda incremental mask: the table never shrinks");
  resize_table(plan.table_rows, plan.table_words);
  Device& d = *dev_;
  for (const auto& [row, words] : plan.host_rows)
    TS_CUDA_CHECK(cudaMemcpyAsync(d.table.data() + static_cast<size_t>(row) * static_cast<size_t>(dev_words_), words.data(),
                                  words.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, d.stream),
                  "cuda incremental mask: upload walked row");
  std::vector<int32_t> packed;
  packed.reserve(static_cast<size_t>(4 * n));
  for (const auto* v : {&plan.src_row, &plan.batch_parent, &plan.slot, &plan.dst_row}) packed.insert(packed.end(), v->begin(), v->end());
  d.plan.reserve_discard(packed.size(), "mask plan");
  d.out.reserve_discard(std::max<size_t>(static_cast<size_t>(n) * static_cast<size_t>(words_per_row), 1), "mask rows");
  TS_CUDA_CHECK(cudaMemcpyAsync(d.plan.data(), packed.data(), packed.size() * sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
                "cuda incremental mask: upload plan");
  AncestorMaskExtendParams p;
  p.src_row = d.plan.data();
  p.batch_parent = d.plan.data() + n;
  p.slot = d.plan.data() + 2 * n;
  p.dst_row = d.plan.data() + 3 * n;
  p.num_new = n;
  p.table = d.table.data();
  p.table_rows = dev_rows_;
  p.table_words = dev_words_;
  p.num_slots = num_slots;
  p.maybe_out = d.out.data();
  p.out_words = words_per_row;
  p.maybe_status = d.status.data();
  ancestor_mask_extend(p, d.stream);
  return true;
}

BitMask IncrementalAncestorMask::extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) {
  BitMask out(static_cast<int32_t>(nodes.size()), num_slots);
  if (enqueue_extend(tree, nodes, num_slots, out.words_per_row)) {
    Device& d = *dev_;
    if (!out.words.empty())
      TS_CUDA_CHECK(counted_download(out.words.data(), d.out.data(), out.words.size() * sizeof(uint64_t), d.stream),
                    "cuda incremental mask: download rows");
    status_check(d.status.data(), d.stream, "cuda incremental mask: extend");  // synchronises
  }
  planner_.finish_extend();
  return out;
}

DeviceMask IncrementalAncestorMask::extend_on_device(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) {
  const int32_t words_per_row = BitMask::words_for(num_slots);
  if (!enqueue_extend(tree, nodes, num_slots, words_per_row)) {
    planner_.finish_extend();
    return {nullptr, words_per_row, nullptr, nullptr};  // no rows: nothing to wait for
  }
  Device& d = *dev_;
  TS_CUDA_CHECK(cudaEventRecord(d.ready, d.stream), "cuda incremental mask: record rows ready");
  planner_.finish_extend();
  return {d.out.data(), words_per_row, d.ready, d.status.data()};
}

}  // namespace triescope::cuda
