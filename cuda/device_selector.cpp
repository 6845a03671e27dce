#include "cuda/device_selector.h"

#include <algorithm>

#include "core/common/error.h"
#include "core/common/parallel_rows.h"
#include "core/select/log_normaliser.h"
#include "cuda/cuda_common.cuh"
#include "cuda/topk_candidates.cuh"

namespace triescope::cuda {

struct DeviceSelector::Device {
  cudaStream_t stream = nullptr;
  DeviceBuffer<float> logits;        // [rows x vocab] run_logits' rows
  DeviceBuffer<double> logprobs;     // [rows x vocab] run_logprobs' rows (allocated on first use)
  DeviceBuffer<double> lse;          // [rows] each row's log-normaliser
  DeviceBuffer<double> beam_scores;  // [rows]
  DeviceBuffer<double> ws_score;     // [max over row counts of topk_candidates_workspace_size]
  DeviceBuffer<int64_t> ws_flat;     // [the same]
  DeviceBuffer<double> out_score;    // [k]
  DeviceBuffer<int64_t> out_flat;    // [k]
  DeviceBuffer<int32_t> out_count;   // [1]
  ~Device() {
    if (stream) cudaStreamDestroy(stream);
  }
};

DeviceSelector::DeviceSelector() : dev_(std::make_unique<Device>()) {
  std::string why;
  TS_CHECK(device_count(&why) > 0, "cuda selector: no usable CUDA device (" << why << ")");
  TS_CUDA_CHECK(cudaStreamCreateWithFlags(&dev_->stream, cudaStreamNonBlocking), "cuda selector: create stream");
}

DeviceSelector::~DeviceSelector() = default;

void DeviceSelector::plan(const SelectionShape& shape) {
  host_.plan(shape);  // checks the sizes
  shape_ = shape;
  on_host_ = shape.k > kTopkMaxK;
  if (on_host_) return;
  // The chunk split, and so the workspace, depends on the row count: room for the largest.
  int64_t entries = 0;
  for (int32_t r = 1; r <= shape.rows; ++r) entries = std::max(entries, topk_candidates_workspace_size(r, shape.vocab, shape.k));
  const auto cells = static_cast<size_t>(shape.rows) * static_cast<size_t>(shape.vocab);
  Device& d = *dev_;
  d.logits.resize_discard(cells, "selector logits");
  d.lse.resize_discard(static_cast<size_t>(shape.rows), "selector log-normalisers");
  d.beam_scores.resize_discard(static_cast<size_t>(shape.rows), "selector beam scores");
  d.ws_score.resize_discard(static_cast<size_t>(entries), "selector workspace scores");
  d.ws_flat.resize_discard(static_cast<size_t>(entries), "selector workspace indices");
  d.out_score.resize_discard(static_cast<size_t>(shape.k), "selector scores");
  d.out_flat.resize_discard(static_cast<size_t>(shape.k), "selector indices");
  d.out_count.resize_discard(1, "selector count");
  lse_.resize(static_cast<size_t>(shape.rows));
}

std::vector<ScoredCandidate> DeviceSelector::run_logits(const std::vector<const float*>& rows, const double* beam_scores, int32_t k) {
  if (on_host_) return host_.run_logits(rows, beam_scores, k);
  const auto n = static_cast<int32_t>(rows.size());
  selection_shape_check(shape_, n, k, "cuda selector");
  if (n == 0 || k == 0) return {};
  const int32_t V = shape_.vocab;
  parallel_rows(n, [&](int32_t r) { lse_[static_cast<size_t>(r)] = log_softmax_lse(rows[static_cast<size_t>(r)], V); }, 0, V);
  Device& d = *dev_;
  for (int32_t r = 0; r < n; ++r)
    TS_CUDA_CHECK(cudaMemcpyAsync(d.logits.data() + static_cast<size_t>(r) * V, rows[static_cast<size_t>(r)], sizeof(float) * V,
                                  cudaMemcpyHostToDevice, d.stream),
                  "cuda selector: upload logits row " << r);
  TS_CUDA_CHECK(cudaMemcpyAsync(d.lse.data(), lse_.data(), sizeof(double) * n, cudaMemcpyHostToDevice, d.stream),
                "cuda selector: upload log-normalisers");
  return select_uploaded(n, beam_scores, k, true);
}

std::vector<ScoredCandidate> DeviceSelector::run_logprobs(const double* logprobs, int32_t rows, const double* beam_scores, int32_t k) {
  if (on_host_) return host_.run_logprobs(logprobs, rows, beam_scores, k);
  selection_shape_check(shape_, rows, k, "cuda selector");
  if (rows == 0 || k == 0) return {};
  Device& d = *dev_;
  const size_t cells = static_cast<size_t>(rows) * static_cast<size_t>(shape_.vocab);
  d.logprobs.reserve_discard(static_cast<size_t>(shape_.rows) * static_cast<size_t>(shape_.vocab), "selector log-probs");
  TS_CUDA_CHECK(cudaMemcpyAsync(d.logprobs.data(), logprobs, sizeof(double) * cells, cudaMemcpyHostToDevice, d.stream),
                "cuda selector: upload log-probs");
  return select_uploaded(rows, beam_scores, k, false);
}

std::vector<ScoredCandidate> DeviceSelector::select_uploaded(int32_t rows, const double* beam_scores, int32_t k, bool from_logits) {
  Device& d = *dev_;
  TS_CUDA_CHECK(cudaMemcpyAsync(d.beam_scores.data(), beam_scores, sizeof(double) * rows, cudaMemcpyHostToDevice, d.stream),
                "cuda selector: upload beam scores");
  TopkCandidatesParams p;
  p.logprobs = from_logits ? nullptr : d.logprobs.data();
  p.maybe_logits = from_logits ? d.logits.data() : nullptr;
  p.maybe_lse = from_logits ? d.lse.data() : nullptr;
  p.beam_scores = d.beam_scores.data();
  p.num_rows = rows;
  p.vocab = shape_.vocab;
  p.k = k;
  p.workspace_score = d.ws_score.data();
  p.workspace_flat = d.ws_flat.data();
  p.out_score = d.out_score.data();
  p.out_flat = d.out_flat.data();
  p.out_count = d.out_count.data();
  topk_candidates(p, d.stream);
  std::vector<double> score(static_cast<size_t>(k));
  std::vector<int64_t> flat(static_cast<size_t>(k));
  int32_t count = 0;
  TS_CUDA_CHECK(cudaMemcpyAsync(score.data(), d.out_score.data(), sizeof(double) * k, cudaMemcpyDeviceToHost, d.stream),
                "cuda selector: download scores");
  TS_CUDA_CHECK(cudaMemcpyAsync(flat.data(), d.out_flat.data(), sizeof(int64_t) * k, cudaMemcpyDeviceToHost, d.stream),
                "cuda selector: download indices");
  TS_CUDA_CHECK(cudaMemcpyAsync(&count, d.out_count.data(), sizeof(int32_t), cudaMemcpyDeviceToHost, d.stream),
                "cuda selector: download count");
  TS_CUDA_CHECK(cudaStreamSynchronize(d.stream), "cuda selector: select");  // the host rows may die after this
  TS_CHECK(count >= 0 && count <= k, "cuda selector: the device found " << count << " candidates of " << k);
  std::vector<ScoredCandidate> out(static_cast<size_t>(count));
  for (size_t i = 0; i < out.size(); ++i) out[i] = {score[i], flat[i]};
  return out;
}

}  // namespace triescope::cuda
