#include "cuda/incremental_ancestor_mask.h"

#include <algorithm>

#include "core/common/error.h"
#include "cuda/ancestor_mask.cuh"
#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

struct IncrementalAncestorMask::Device {
  cudaStream_t stream = nullptr;
  DeviceBuffer<uint64_t> table;     // [table_rows x table_words]
  DeviceBuffer<int32_t> plan;       // [4 x num_new] src_row | batch_parent | slot | dst_row
  DeviceBuffer<uint64_t> out;       // [num_new x out_words]
  DeviceBuffer<KernelStatus> status;
  ~Device() {
    if (stream) cudaStreamDestroy(stream);
  }
};

namespace {
int32_t even_words(int32_t slots) {
  const int32_t w = BitMask::words_for(std::max(slots, 64));
  return w + (w & 1);
}
}  // namespace

IncrementalAncestorMask::IncrementalAncestorMask() : dev_(std::make_unique<Device>()) {
  std::string why;
  TS_CHECK(device_count(&why) > 0, "cuda incremental mask: no usable CUDA device (" << why << ")");
  TS_CUDA_CHECK(cudaStreamCreateWithFlags(&dev_->stream, cudaStreamNonBlocking), "cuda incremental mask: create stream");
  dev_->status.resize_discard(1, "kernel status");
  TS_CUDA_CHECK(cudaMemsetAsync(dev_->status.data(), 0, sizeof(KernelStatus), dev_->stream), "cuda incremental mask: clear status");
  reset();
}

IncrementalAncestorMask::~IncrementalAncestorMask() = default;

void IncrementalAncestorMask::reset(int32_t capacity_slots) {
  row_of_.clear();
  free_rows_.clear();
  table_rows_ = 0;
  dev_->table.resize_discard(0);
  table_words_ = even_words(capacity_slots);
  fallback_rows_ = 0;
}

void IncrementalAncestorMask::grow_rows(int32_t need) {
  if (need <= table_rows_) return;
  const int32_t rows = std::max({need, table_rows_ * 2, 64});
  DeviceBuffer<uint64_t> t(static_cast<size_t>(rows) * static_cast<size_t>(table_words_), "mask table");
  if (table_rows_ > 0)
    TS_CUDA_CHECK(cudaMemcpyAsync(t.data(), dev_->table.data(), dev_->table.bytes(), cudaMemcpyDeviceToDevice, dev_->stream),
                  "cuda incremental mask: grow table rows");
  TS_CUDA_CHECK(cudaStreamSynchronize(dev_->stream), "cuda incremental mask: grow table rows");
  dev_->table.swap(t);
  for (int32_t r = rows - 1; r >= table_rows_; --r) free_rows_.push_back(r);
  table_rows_ = rows;
}

void IncrementalAncestorMask::widen(int32_t num_slots) {
  if (BitMask::words_for(num_slots) <= table_words_) return;
  const int32_t words = std::max(even_words(num_slots), table_words_ * 2);  // amortised doubling
  if (table_rows_ > 0) {
    DeviceBuffer<uint64_t> t(static_cast<size_t>(table_rows_) * static_cast<size_t>(words), "mask table");
    TS_CUDA_CHECK(cudaMemsetAsync(t.data(), 0, t.bytes(), dev_->stream), "cuda incremental mask: widen table");
    TS_CUDA_CHECK(cudaMemcpy2DAsync(t.data(), static_cast<size_t>(words) * 8, dev_->table.data(),
                                    static_cast<size_t>(table_words_) * 8, static_cast<size_t>(table_words_) * 8,
                                    static_cast<size_t>(table_rows_), cudaMemcpyDeviceToDevice, dev_->stream),
                  "cuda incremental mask: widen table");
    TS_CUDA_CHECK(cudaStreamSynchronize(dev_->stream), "cuda incremental mask: widen table");
    dev_->table.swap(t);
  }
  table_words_ = words;
}

int32_t IncrementalAncestorMask::take_row() {
  if (free_rows_.empty()) grow_rows(table_rows_ + 1);
  const int32_t r = free_rows_.back();
  free_rows_.pop_back();
  return r;
}

BitMask IncrementalAncestorMask::extend(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots) {
  widen(num_slots);
  const int32_t n = static_cast<int32_t>(nodes.size());
  BitMask out(n, num_slots);
  if (n == 0) return out;
  std::vector<int32_t> plan(static_cast<size_t>(4 * n));
  int32_t* src_row = plan.data();
  int32_t* batch_parent = plan.data() + n;
  int32_t* slot = plan.data() + 2 * n;
  int32_t* dst_row = plan.data() + 3 * n;
  std::unordered_map<int32_t, int32_t> in_batch;  // node id -> index in `nodes`
  std::vector<int32_t> scratch_rows;               // host-walked fallback rows, freed after the launch
  std::vector<int32_t> replaced;                   // rows of nodes extended again, freed after the launch
  for (int32_t i = 0; i < n; ++i) {
    const TreeNode& nd = tree.node(nodes[static_cast<size_t>(i)]);
    TS_CHECK(nd.slot == kNoSlot || (nd.slot >= 0 && nd.slot < num_slots),
             "ancestor mask: node " << nd.id << " slot " << nd.slot << " outside [0, " << num_slots << ")");
    slot[i] = nd.slot;
    batch_parent[i] = -1;
    src_row[i] = -1;
    if (nd.parent != kNoNode) {
      if (auto b = in_batch.find(nd.parent); b != in_batch.end()) {
        batch_parent[i] = b->second;
        src_row[i] = src_row[b->second];  // the same nearest ancestor outside the batch
      } else if (auto h = row_of_.find(nd.parent); h != row_of_.end()) {
        src_row[i] = h->second;
      } else {
        // As the CPU twin: a parent with no held row is walked on the host.
        ++fallback_rows_;
        std::vector<uint64_t> row(static_cast<size_t>(table_words_), 0);
        for (int32_t a = nd.parent; a != kNoNode; a = tree.node(a).parent) {
          const int32_t s = tree.node(a).slot;
          if (s == kNoSlot) continue;
          TS_CHECK(s >= 0 && s < num_slots, "ancestor mask: node " << a << " holds slot " << s << " outside [0, " << num_slots << ")");
          row[static_cast<size_t>(s >> 6)] |= uint64_t{1} << (s & 63);
        }
        const int32_t r = take_row();
        TS_CUDA_CHECK(cudaMemcpyAsync(dev_->table.data() + static_cast<size_t>(r) * table_words_, row.data(),
                                      row.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, dev_->stream),
                      "cuda incremental mask: upload fallback row");
        TS_CUDA_CHECK(cudaStreamSynchronize(dev_->stream), "cuda incremental mask: upload fallback row");  // `row` dies here
        scratch_rows.push_back(r);
        src_row[i] = r;
      }
    }
    in_batch[nd.id] = i;
  }
  for (int32_t i = 0; i < n; ++i) {
    dst_row[i] = take_row();
    const int32_t id = nodes[static_cast<size_t>(i)];
    if (auto h = row_of_.find(id); h != row_of_.end()) replaced.push_back(h->second);
    row_of_[id] = dst_row[i];
  }
  Device& d = *dev_;
  d.plan.reserve_discard(plan.size(), "mask plan");
  d.out.reserve_discard(std::max<size_t>(out.words.size(), 1), "mask rows");
  TS_CUDA_CHECK(cudaMemcpyAsync(d.plan.data(), plan.data(), plan.size() * sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
                "cuda incremental mask: upload plan");
  AncestorMaskExtendParams p;
  p.src_row = d.plan.data();
  p.batch_parent = d.plan.data() + n;
  p.slot = d.plan.data() + 2 * n;
  p.dst_row = d.plan.data() + 3 * n;
  p.num_new = n;
  p.table = d.table.data();
  p.table_rows = table_rows_;
  p.table_words = table_words_;
  p.num_slots = num_slots;
  p.maybe_out = d.out.data();
  p.out_words = out.words_per_row;
  p.maybe_status = d.status.data();
  ancestor_mask_extend(p, d.stream);
  if (!out.words.empty())
    TS_CUDA_CHECK(cudaMemcpyAsync(out.words.data(), d.out.data(), out.words.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                  d.stream),
                  "cuda incremental mask: download rows");
  status_check(d.status.data(), d.stream, "cuda incremental mask: extend");  // synchronises
  for (int32_t r : scratch_rows) free_rows_.push_back(r);
  for (int32_t r : replaced) free_rows_.push_back(r);
  return out;
}

void IncrementalAncestorMask::retain(const std::vector<int32_t>& nodes) {
  std::unordered_map<int32_t, int32_t> kept;
  kept.reserve(nodes.size());
  for (int32_t id : nodes)
    if (auto it = row_of_.find(id); it != row_of_.end()) {
      kept.emplace(id, it->second);
      row_of_.erase(it);
    }
  for (auto& [id, r] : row_of_) free_rows_.push_back(r);
  row_of_ = std::move(kept);
}

}  // namespace triescope::cuda
