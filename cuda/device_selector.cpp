#include "cuda/device_selector.h"

#include <algorithm>
#include <cstring>

#include "core/common/error.h"
#include "cuda/cuda_common.cuh"
#include "cuda/row_log_normaliser.cuh"
#include "cuda/topk_candidates.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

namespace {
constexpr size_t kAnswerHead = 7;  // int64 words before the scores: the three statuses (2 + 2 + 2), the count (1)
constexpr const char* kUpstreamName[2] = {"model's", "mask builder's"};  // DeviceLogits::status, ::input_status
static_assert(sizeof(KernelStatus) <= 2 * sizeof(int64_t));

}  // namespace

struct DeviceSelector::Device {
  cudaStream_t stream = nullptr;
  DeviceBuffer<float> logits;        // [rows x vocab] run_logits' rows
  DeviceBuffer<double> logprobs;     // [rows x vocab] run_logprobs' rows (allocated on first use)
  DeviceBuffer<double> lse;          // [rows] each row's log-normaliser
  DeviceBuffer<float> lse_ws;        // [row_log_normaliser_workspace_size] the normaliser's block maxima
  DeviceBuffer<double> beam_scores;  // [rows]
  DeviceBuffer<double> ws_score;     // [max over row counts of topk_candidates_workspace_size]
  DeviceBuffer<int64_t> ws_flat;     // [the same]
  // The step's answer, read back in one download: [0, 2) the KernelStatus
  // (a NaN or +inf logit the normaliser met), [2, 4) the logits' producer's
  // KernelStatus (DeviceLogits::status), [4, 6) that of the kernels that
  // built the producer's inputs (DeviceLogits::input_status: the mask
  // builder's), [6] the count (an int32 in its low bytes), [7, 7 + k) the
  // scores (doubles), [7 + k, 7 + 2k) the flat indices.
  DeviceBuffer<int64_t> out;
  ~Device() {
    if (stream) cudaStreamDestroy(stream);
  }
};

DeviceSelector::DeviceSelector() : dev_(std::make_unique<Device>()) {
  require_device("cuda selector");
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
  d.lse_ws.resize_discard(static_cast<size_t>(row_log_normaliser_workspace_size(shape.rows, shape.vocab)), "selector normaliser workspace");
  d.beam_scores.resize_discard(static_cast<size_t>(shape.rows), "selector beam scores");
  d.ws_score.resize_discard(static_cast<size_t>(entries), "selector workspace scores");
  d.ws_flat.resize_discard(static_cast<size_t>(entries), "selector workspace indices");
  d.out.resize_discard(kAnswerHead + 2 * static_cast<size_t>(shape.k), "selector answer");
}

std::vector<ScoredCandidate> DeviceSelector::run_logits(const std::vector<const float*>& rows, const double* beam_scores, int32_t k) {
  if (on_host_) return host_.run_logits(rows, beam_scores, k);
  const auto n = static_cast<int32_t>(rows.size());
  selection_shape_check(shape_, n, k, "cuda selector");
  if (n == 0 || k == 0) return {};
  const int32_t V = shape_.vocab;
  Device& d = *dev_;
  for (int32_t r = 0; r < n; ++r)
    TS_CUDA_CHECK(cudaMemcpyAsync(d.logits.data() + static_cast<size_t>(r) * V, rows[static_cast<size_t>(r)], sizeof(float) * V,
                                  cudaMemcpyHostToDevice, d.stream),
                  "cuda selector: upload logits row " << r);
  return select_uploaded(n, beam_scores, k, true, d.stream);
}

bool DeviceSelector::reads_device_logits() const { return !on_host_; }

std::vector<ScoredCandidate> DeviceSelector::run_device_logits(const DeviceLogits& logits, int32_t vocab, const std::vector<int32_t>& row_ids,
                                                               const double* beam_scores, int32_t k) {
  TS_CHECK(reads_device_logits(), "cuda selector: planned for k = " << shape_.k << ", past the device ranking (" << kTopkMaxK
                                                                     << "): it reads no device logits");
  TS_CHECK(vocab == shape_.vocab, "cuda selector: device logits " << vocab << " wide, planned for " << shape_.vocab);
  const auto n = static_cast<int32_t>(row_ids.size());
  selection_shape_check(shape_, n, k, "cuda selector");
  if (n == 0 || k == 0) return {};
  // Everything on the model's stream: its logits are ready in order there.
  // Device memory of ours or of LibTorch's allocator; on the host runtime
  // also a LibTorch CPU tensor (host memory, the model's kernels finished).
  const auto s = static_cast<cudaStream_t>(logits.stream);
  const cudaMemcpyKind kind = logits.rows_in_host_memory ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
  Device& d = *dev_;
  for (int32_t r = 0; r < n; ++r)
    TS_CUDA_CHECK(cudaMemcpyAsync(d.logits.data() + static_cast<size_t>(r) * vocab, logits.rows + static_cast<size_t>(row_ids[static_cast<size_t>(r)]) * vocab,
                                  sizeof(float) * static_cast<size_t>(vocab), kind, s),
                  "cuda selector: gather logits row " << r);
  return select_uploaded(n, beam_scores, k, true, logits.stream, {logits.status, logits.input_status});
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
  return select_uploaded(rows, beam_scores, k, false, d.stream);
}

std::vector<ScoredCandidate> DeviceSelector::select_uploaded(int32_t rows, const double* beam_scores, int32_t k, bool from_logits,
                                                             void* stream_handle, const std::array<void*, 2>& upstream_status) {
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  Device& d = *dev_;
  TS_CUDA_CHECK(cudaMemsetAsync(d.out.data(), 0, 6 * sizeof(int64_t), stream), "cuda selector: clear statuses");
  for (size_t i = 0; i < upstream_status.size(); ++i) {
    if (!upstream_status[i]) continue;  // the model's (and its inputs') status rides back with the answer, then is cleared
    TS_CUDA_CHECK(cudaMemcpyAsync(d.out.data() + 2 + 2 * i, upstream_status[i], sizeof(KernelStatus), cudaMemcpyDeviceToDevice, stream),
                  "cuda selector: copy the " << kUpstreamName[i] << " status");
    TS_CUDA_CHECK(cudaMemsetAsync(upstream_status[i], 0, sizeof(KernelStatus), stream), "cuda selector: clear the " << kUpstreamName[i] << " status");
  }
  TS_CUDA_CHECK(cudaMemcpyAsync(d.beam_scores.data(), beam_scores, sizeof(double) * rows, cudaMemcpyHostToDevice, stream),
                "cuda selector: upload beam scores");
  if (from_logits) {  // each row's log-normaliser, the reference's bit for bit
    RowLogNormaliserParams lp;
    lp.logits = d.logits.data();
    lp.num_rows = rows;
    lp.vocab = shape_.vocab;
    lp.workspace = d.lse_ws.data();
    lp.out_lse = d.lse.data();
    lp.maybe_status = reinterpret_cast<KernelStatus*>(d.out.data());
    row_log_normalisers(lp, stream);
  }
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
  p.out_count = reinterpret_cast<int32_t*>(d.out.data() + 6);
  p.out_score = reinterpret_cast<double*>(d.out.data() + kAnswerHead);
  p.out_flat = d.out.data() + kAnswerHead + k;
  topk_candidates(p, stream);
  std::vector<int64_t> answer(kAnswerHead + 2 * static_cast<size_t>(k));
  TS_CUDA_CHECK(counted_download(answer.data(), d.out.data(), answer.size() * sizeof(int64_t), stream), "cuda selector: download");
  TS_CUDA_CHECK(counted_stream_sync(stream), "cuda selector: select");  // the host rows may die after this
  for (size_t i = upstream_status.size(); i-- > 0;) {  // inputs first: a bad mask explains a bad forward
    KernelStatus up;
    std::memcpy(static_cast<void*>(&up), answer.data() + 2 + 2 * i, sizeof up);
    TS_CHECK(up.code == 0, "cuda selector: the " << kUpstreamName[i] << " kernels reported " << kernel_error_name(static_cast<KernelError>(up.code))
                                                 << " (index " << up.a << ", value " << up.b << ")");
  }
  KernelStatus st;
  std::memcpy(static_cast<void*>(&st), answer.data(), sizeof st);
  TS_CHECK(st.code == 0, "cuda selector: " << kernel_error_name(static_cast<KernelError>(st.code)) << " (row " << st.a << ", token " << st.b << ")");
  int32_t count = 0;
  std::memcpy(&count, answer.data() + 6, sizeof count);
  TS_CHECK(count >= 0 && count <= k, "cuda selector: the device found " << count << " candidates of " << k);
  std::vector<ScoredCandidate> out(static_cast<size_t>(count));
  for (size_t i = 0; i < out.size(); ++i) {
    std::memcpy(&out[i].score, answer.data() + kAnswerHead + i, sizeof(double));
    out[i].flat = answer[kAnswerHead + static_cast<size_t>(k) + i];
  }
  return out;
}

}  // namespace triescope::cuda
