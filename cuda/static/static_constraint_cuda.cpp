#include "cuda/static/static_constraint_cuda.h"

#include <cstddef>
#include <cstring>

#include "core/common/error.h"
#include "cuda/host_waits.h"

namespace triescope::cuda {

namespace {

// A device copy of `v`, its buffer kept in `arrays`: the copy's address (null when `v` is empty).
template <typename T>
const T* upload_to(std::vector<DeviceBuffer<std::byte>>& arrays, const std::vector<T>& v, const char* what) {
  if (v.empty()) return nullptr;
  DeviceBuffer<std::byte>& d = arrays.emplace_back();
  d.resize_discard(v.size() * sizeof(T), what);
  TS_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), d.bytes(), cudaMemcpyHostToDevice), "upload of " << what);
  return reinterpret_cast<const T*>(d.data());
}

template <typename T>
void download_to(std::vector<T>& v, const DeviceBuffer<T>& d, size_t n, cudaStream_t stream, const char* what) {
  v.resize(n);
  if (n) TS_CUDA_CHECK(counted_download(v.data(), d.data(), n * sizeof(T), stream), "download of " << what);
}

// Calls f(the view's pointer, tm's array, what it holds) for each array of the
// matrix: the one list the host view and the device upload both follow.
template <typename F>
void matrix_arrays(StaticMatrixView& v, const TransitionMatrix& tm, F&& f) {
  f(v.level_start, tm.level_start, "transition matrix level starts");
  f(v.max_branch, tm.max_branch, "transition matrix branch factors");
  f(v.row_ptr, tm.row_ptr, "transition matrix row pointers");
  f(v.edges, tm.edges, "transition matrix edges");
  f(v.row_ptr_u, tm.row_ptr_compact, "transition matrix compact row pointers");
  f(v.cols16, tm.cols16, "transition matrix tokens (16 bit)");
  f(v.cols32, tm.cols32, "transition matrix tokens (32 bit)");
  f(v.mask1, tm.dense_mask1, "dense mask level 1");
  f(v.mask2, tm.dense_mask2, "dense mask level 2");
  f(v.dstates1, tm.dense_states1, "dense state table level 1");
  f(v.dstates2, tm.dense_states2, "dense state table level 2");
  f(v.rank1, tm.dense_rank1, "dense rank directory level 1");
  f(v.rank2, tm.dense_rank2, "dense rank directory level 2");
}

}  // namespace

StaticMatrixView static_matrix_scalars(const TransitionMatrix& tm) {
  StaticMatrixView v;
  v.vocab = tm.vocab_size;
  v.length = tm.length;
  v.dense_levels = tm.dense_levels;
  v.words_per_row = tm.words_per_row;
  v.compact = tm.layout == CsrLayout::compact ? 1 : 0;
  v.num_states = tm.num_states();
  v.num_edges = tm.num_edges();
  // Same row rule as the CPU: stacked, every state but the last (a leaf)
  // reads its own row; compact, the states above the leaves.
  v.num_rows = tm.layout == CsrLayout::stacked ? static_cast<int64_t>(tm.row_ptr.size()) - 2
                                               : static_cast<int64_t>(tm.row_ptr_compact.size()) - 2;
  return v;
}

StaticMatrixView static_matrix_host_view(const TransitionMatrix& tm) {
  StaticMatrixView v = static_matrix_scalars(tm);
  matrix_arrays(v, tm, [](auto& field, const auto& host, const char*) { field = host.empty() ? nullptr : host.data(); });
  return v;
}

DeviceTransitionMatrix::DeviceTransitionMatrix(const TransitionMatrix& tm) {
  TS_CHECK(tm.num_states() >= 2 && tm.length >= 1, "static step (cuda): empty transition matrix");
  view_ = static_matrix_scalars(tm);
  matrix_arrays(view_, tm, [this](auto& field, const auto& host, const char* what) { field = upload_to(arrays_, host, what); });
}

int64_t DeviceTransitionMatrix::bytes() const {
  size_t total = 0;
  for (const DeviceBuffer<std::byte>& a : arrays_) total += a.bytes();
  return static_cast<int64_t>(total);
}

StaticStepCuda::StaticStepCuda(const DeviceTransitionMatrix& matrix, int32_t n, int32_t groups, int32_t k, cudaStream_t stream,
                               StepLauncher launcher)
    : matrix_(matrix), n_(n), groups_(groups), k_(k), stream_(stream), launcher_(launcher) {
  TS_CHECK(n >= 1 && groups >= 1 && n % groups == 0, "static step (cuda): " << n << " rows do not split into " << groups << " groups");
  TS_CHECK(k >= 1 && int64_t{k} <= int64_t{n / groups} * matrix.view().vocab,
           "static step (cuda): k = " << k << " outside [1, rows per group x |V|]");
  const size_t N = static_cast<size_t>(n), K = static_cast<size_t>(k), G = static_cast<size_t>(groups);
  const size_t V = static_cast<size_t>(matrix.view().vocab);
  states_.resize_discard(N, "static step states");
  scores_.resize_discard(N, "static step beam scores");
  step_.resize_discard(1, "static step index");
  valid_.resize_discard(N, "static step valid counts");
  masked_.resize_discard(N * V, "static step masked log-probs");
  ws_score_.resize_discard(N * K, "static step workspace");
  ws_flat_.resize_discard(N * K, "static step workspace");
  ws_next_.resize_discard(N * K, "static step workspace");
  out_score_.resize_discard(G * K, "static step top-k scores");
  out_flat_.resize_discard(G * K, "static step top-k ids");
  out_next_.resize_discard(G * K, "static step top-k next states");
  out_count_.resize_discard(G, "static step top-k counts");
  status_.resize_discard(1, "static step status");
  const KernelStatus zero;
  TS_CUDA_CHECK(cudaMemcpy(status_.data(), &zero, sizeof zero, cudaMemcpyHostToDevice), "static step: clear status");
}

StaticStepCuda::~StaticStepCuda() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);  // no throw from a destructor
}

void StaticStepCuda::reset(const std::vector<int64_t>& states, const std::vector<double>& beam_scores, int32_t step) {
  TS_CHECK(states.size() == static_cast<size_t>(n_) && beam_scores.size() == static_cast<size_t>(n_),
           "static step (cuda): reset needs " << n_ << " states and scores, got " << states.size() << " and " << beam_scores.size());
  TS_CUDA_CHECK(cudaMemcpyAsync(states_.data(), states.data(), states.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream_),
                "static step: upload states");
  TS_CUDA_CHECK(cudaMemcpyAsync(scores_.data(), beam_scores.data(), beam_scores.size() * sizeof(double), cudaMemcpyHostToDevice, stream_),
                "static step: upload scores");
  TS_CUDA_CHECK(cudaMemcpyAsync(step_.data(), &step, sizeof step, cudaMemcpyHostToDevice, stream_), "static step: upload step");
  TS_CUDA_CHECK(counted_stream_sync(stream_), "static step: reset");
}

StaticStepParams StaticStepCuda::params(const float* logits_dev, bool write_masked, bool advance) {
  StaticStepParams p;
  p.matrix = matrix_.view();
  p.logits = logits_dev;
  p.states = states_.data();
  p.beam_scores = scores_.data();
  p.step = step_.data();
  p.n = n_;
  p.groups = groups_;
  p.k = k_;
  p.advance = advance;
  p.masked_logprobs = write_masked ? masked_.data() : nullptr;
  p.valid = valid_.data();
  p.ws_score = ws_score_.data();
  p.ws_flat = ws_flat_.data();
  p.ws_next = ws_next_.data();
  p.out_score = out_score_.data();
  p.out_flat = out_flat_.data();
  p.out_next = out_next_.data();
  p.out_count = out_count_.data();
  p.maybe_status = status_.data();
  return p;
}

void StaticStepCuda::launch(const float* logits_dev, bool write_masked, bool advance) {
  launcher_(params(logits_dev, write_masked, advance), stream_);
}

void StaticStepCuda::graph_launch(const float* logits_dev, bool write_masked, bool advance) {
  TS_CHECK(stream_ != nullptr, "static step (cuda): graph capture needs a non-default stream");
  const auto key = std::make_tuple(logits_dev, write_masked, advance);
  auto it = graphs_.find(key);
  if (it == graphs_.end())
    it = graphs_.emplace(key, graph_capture(stream_, [&] { launcher_(params(logits_dev, write_masked, advance), stream_); }, "static step"))
             .first;
  TS_CUDA_CHECK(cudaGraphLaunch(it->second, stream_), "static step: graph launch");
}

void StaticStepCuda::check(const char* what) { status_check(status_.data(), stream_, what); }

StaticStepHost StaticStepCuda::download(bool masked) {
  StaticStepHost h;
  const size_t N = static_cast<size_t>(n_), GK = static_cast<size_t>(groups_) * static_cast<size_t>(k_);
  if (masked) download_to(h.masked_logprobs, masked_, N * static_cast<size_t>(matrix_.view().vocab), stream_, "masked log-probs");
  download_to(h.valid, valid_, N, stream_, "valid counts");
  download_to(h.top_score, out_score_, GK, stream_, "top-k scores");
  download_to(h.top_flat, out_flat_, GK, stream_, "top-k ids");
  download_to(h.top_next, out_next_, GK, stream_, "top-k next states");
  download_to(h.top_count, out_count_, static_cast<size_t>(groups_), stream_, "top-k counts");
  download_to(h.states, states_, N, stream_, "states");
  download_to(h.beam_scores, scores_, N, stream_, "beam scores");
  TS_CUDA_CHECK(counted_download(&h.step, step_.data(), sizeof h.step, stream_), "download of the step index");
  TS_CUDA_CHECK(counted_stream_sync(stream_), "static step: download");
  return h;
}

void StaticStepCuda::poke_state(int32_t row, int64_t state) {
  TS_CHECK(row >= 0 && row < n_, "static step (cuda): poke_state row " << row << " outside [0, " << n_ << ")");
  TS_CUDA_CHECK(cudaMemcpyAsync(states_.data() + row, &state, sizeof state, cudaMemcpyHostToDevice, stream_), "static step: poke state");
  TS_CUDA_CHECK(counted_stream_sync(stream_), "static step: poke state");
}

void StaticStepCuda::poke_step(int32_t step) {
  TS_CUDA_CHECK(cudaMemcpyAsync(step_.data(), &step, sizeof step, cudaMemcpyHostToDevice, stream_), "static step: poke step");
  TS_CUDA_CHECK(counted_stream_sync(stream_), "static step: poke step");
}

void StaticStepCuda::poison() {
  constexpr int kPoison = 0xa5;
  TS_CUDA_CHECK(cudaMemsetAsync(masked_.data(), kPoison, masked_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(valid_.data(), kPoison, valid_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(ws_score_.data(), kPoison, ws_score_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(ws_flat_.data(), kPoison, ws_flat_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(ws_next_.data(), kPoison, ws_next_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(out_score_.data(), kPoison, out_score_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(out_flat_.data(), kPoison, out_flat_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(out_next_.data(), kPoison, out_next_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(cudaMemsetAsync(out_count_.data(), kPoison, out_count_.bytes(), stream_), "static step: poison");
  TS_CUDA_CHECK(counted_stream_sync(stream_), "static step: poison");
}

}  // namespace triescope::cuda
