#include "cuda/static/static_constraint_index.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <limits>

#include "core/common/error.h"
#include "core/constraint/static_constraint.h"
#include "cuda/cuda_common.cuh"
#include "cuda/static/static_constraint_cuda.h"
#include "cuda/static/static_mask.cuh"
#include "cuda/static/static_mask_rows.h"
#include "cuda/host_waits.h"

namespace triescope::cuda {

namespace {

template <typename T>
void grow(DeviceBuffer<T>& b, size_t n, const char* what) {
  if (b.size() < n) b.resize_discard(std::max<size_t>(n, 1), what);
}

template <typename T>
void d2h(std::vector<T>& v, const DeviceBuffer<T>& d, size_t n, cudaStream_t s, const char* what) {
  v.resize(n);
  if (n) TS_CUDA_CHECK(counted_download(v.data(), d.data(), n * sizeof(T), s), "download of " << what);
}

}  // namespace

struct StaticIndexCuda::Device {
  explicit Device(const TransitionMatrix& tm) : matrix(tm) {}
  DeviceTransitionMatrix matrix;
  cudaStream_t stream = nullptr;  // the legacy default stream: every call synchronises before it returns
  DeviceBuffer<int64_t> states, row_range, dense_next, cand_next;
  DeviceBuffer<double> in, out;  // float rows use the same bytes
  DeviceBuffer<int32_t> valid, cand_tok;
};

StaticIndexCuda::StaticIndexCuda(std::shared_ptr<const VntkIndex> cpu, VerifyExec exec) : cpu_(std::move(cpu)), exec_(exec) {
  TS_CHECK(cpu_, "static constraint (cuda): no VNTK index");
  if (exec_ == VerifyExec::device) {
    require_device("cuda static constraint");
    dev_ = std::make_unique<Device>(cpu_->matrix());
  }
}

StaticIndexCuda::~StaticIndexCuda() = default;

template <class T>
void StaticIndexCuda::run(const int64_t* states, int32_t n, int32_t step, T* lp, Rows& o) const {
  TS_CHECK(n >= 0, "static constraint (cuda): " << n << " beams");
  TS_CHECK(step >= 0, "static constraint (cuda): step " << step << " < 0");
  const TransitionMatrix& tm = cpu_->matrix();
  const int32_t V = tm.vocab_size;
  const size_t N = static_cast<size_t>(n), VV = static_cast<size_t>(V);
  o.step = step;
  o.dense = step < tm.dense_levels;
  o.bt = (!o.dense && step < tm.length) ? tm.max_branch[static_cast<size_t>(step)] : 0;
  const size_t BT = static_cast<size_t>(o.bt);
  o.states.assign(states, states + n);
  o.row_of.clear();
  for (int32_t i = 0; i < n; ++i) o.row_of.emplace(states[i], i);
  ++runs_;
  if (n == 0) {
    o.valid.clear();
    o.row_range.clear();
    o.dense_next.clear();
    o.cand_tok.clear();
    o.cand_next.clear();
    return;
  }
  if (exec_ == VerifyExec::host_twin) {
    const StaticMatrixView m = static_matrix_host_view(tm);
    o.valid.assign(N, 0);
    o.row_range.assign(2 * N, 0);
    o.dense_next.assign(o.dense ? N * VV : 0, 0);
    o.cand_tok.assign(N * BT, 0);
    o.cand_next.assign(N * BT, 0);
    std::vector<T> out(VV);
    for (size_t r = 0; r < N; ++r) {
      T* row = lp + r * VV;
      const StaticMaskRowPlan plan = static_mask_plan(m, states[r], step);
      static_mask_pass1(m, plan, states[r], step, row, out.data(), o.dense ? o.dense_next.data() + r * VV : nullptr,
                        -std::numeric_limits<T>::infinity(), 0, 1);
      static_mask_pass2(m, plan, row, out.data(), o.cand_tok.data() + r * BT, o.cand_next.data() + r * BT, 0, 1);
      o.valid[r] = static_mask_count(m, plan);
      o.row_range[2 * r] = plan.dense ? 0 : plan.begin;
      o.row_range[2 * r + 1] = plan.dense ? 0 : plan.end;
      std::copy(out.begin(), out.end(), row);
    }
    return;
  }
  Device& d = *dev_;
  grow(d.states, N, "static constraint states");
  grow(d.in, (N * VV * sizeof(T) + sizeof(double) - 1) / sizeof(double), "static constraint log-probs");
  grow(d.out, (N * VV * sizeof(T) + sizeof(double) - 1) / sizeof(double), "static constraint masked log-probs");
  grow(d.valid, N, "static constraint valid counts");
  grow(d.row_range, 2 * N, "static constraint rows read");
  if (o.dense) grow(d.dense_next, N * VV, "static constraint dense next states");
  grow(d.cand_tok, N * BT, "static constraint candidate tokens");
  grow(d.cand_next, N * BT, "static constraint candidate next states");
  TS_CUDA_CHECK(cudaMemcpyAsync(d.states.data(), states, N * sizeof(int64_t), cudaMemcpyHostToDevice, d.stream),
                "static constraint: upload states");
  TS_CUDA_CHECK(cudaMemcpyAsync(d.in.data(), lp, N * VV * sizeof(T), cudaMemcpyHostToDevice, d.stream),
                "static constraint: upload log-probs");
  StaticMaskParams<T> p;
  p.matrix = d.matrix.view();
  p.states = d.states.data();
  p.n = n;
  p.step = step;
  p.in = reinterpret_cast<const T*>(d.in.data());
  p.out = reinterpret_cast<T*>(d.out.data());
  p.valid = d.valid.data();
  p.row_range = d.row_range.data();
  p.dense_next = o.dense ? d.dense_next.data() : nullptr;
  p.cand_tok = BT ? d.cand_tok.data() : nullptr;
  p.cand_next = BT ? d.cand_next.data() : nullptr;
  p.bt = o.bt;
  static_mask(p, d.stream);
  TS_CUDA_CHECK(counted_download(lp, d.out.data(), N * VV * sizeof(T), d.stream),
                "static constraint: download masked log-probs");
  d2h(o.valid, d.valid, N, d.stream, "valid counts");
  d2h(o.row_range, d.row_range, 2 * N, d.stream, "rows read");
  d2h(o.dense_next, d.dense_next, o.dense ? N * VV : 0, d.stream, "dense next states");
  d2h(o.cand_tok, d.cand_tok, N * BT, d.stream, "candidate tokens");
  d2h(o.cand_next, d.cand_next, N * BT, d.stream, "candidate next states");
  TS_CUDA_CHECK(counted_stream_sync(d.stream), "static constraint: mask step");
}

template <class T>
void StaticIndexCuda::mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path) {
  run(states, n, step, lp, last_);
  if (valid) std::copy(last_.valid.begin(), last_.valid.end(), valid);
  if (path) std::fill(path, path + n, last_.dense ? MaskPath::dense : MaskPath::sparse);
}
// MaskBothPrecisions calls these from every file that builds the index.
template void StaticIndexCuda::mask_impl(const int64_t*, int32_t, int32_t, float*, int32_t*, MaskPath*);
template void StaticIndexCuda::mask_impl(const int64_t*, int32_t, int32_t, double*, int32_t*, MaskPath*);


namespace {
int64_t lookup_next(const StaticIndexCuda::Rows& rows, int32_t r, int32_t token, int32_t V) {
  if (rows.dense) return rows.dense_next[static_cast<size_t>(r) * static_cast<size_t>(V) + static_cast<size_t>(token)];
  const size_t base = static_cast<size_t>(r) * static_cast<size_t>(rows.bt);
  for (int32_t k = 0; k < rows.valid[static_cast<size_t>(r)]; ++k)
    if (rows.cand_tok[base + static_cast<size_t>(k)] == token) return rows.cand_next[base + static_cast<size_t>(k)];
  return kDeadState;
}
}  // namespace

int64_t StaticIndexCuda::next_state(int64_t state, int32_t token, int32_t step) const {
  const TransitionMatrix& tm = cpu_->matrix();
  // Same contract as static_next_state: out-of-range input is dead.
  if (state < 0 || state >= tm.num_states() || token < 0 || token >= tm.vocab_size || step < 0) return kDeadState;
  if (last_.step == step) {
    const auto it = last_.row_of.find(state);
    if (it != last_.row_of.end()) return lookup_next(last_, it->second, token, tm.vocab_size);
  }
  // Not masked in the last step (decoders never do this): the kernel for this one state.
  ++fallbacks_;
  Rows one;
  std::vector<double> lp(static_cast<size_t>(tm.vocab_size), 0.0);
  run(&state, 1, step, lp.data(), one);
  return lookup_next(one, 0, token, tm.vocab_size);
}

void StaticIndexCuda::trace_extra(int64_t state, int32_t step, nlohmann::json& rec) const {
  const TransitionMatrix& tm = cpu_->matrix();
  if (step < tm.dense_levels || state < 0 || state >= tm.num_states()) return;
  TS_CHECK(last_.step == step && last_.row_of.count(state),
           "static constraint (cuda): trace info for state " << state << " at step " << step << ", which the last mask did not read");
  const size_t r = static_cast<size_t>(last_.row_of.at(state));
  // The CSR slice the kernel read (Figure 1e): P[s] .. P[s + 1], and the fixed width B_t.
  rec["row"] = {last_.row_range[2 * r], last_.row_range[2 * r + 1]};
  rec["slice"] = last_.bt;
}

bool static_index_on_device(const std::string& impl, bool sparse_ranking) { return impl == "vntk" && !sparse_ranking; }

std::shared_ptr<ConstraintIndex> constraint_index_make(const ConstraintIndexRequest& request, VerifyExec exec) {
  if (!static_index_on_device(request.impl, request.sparse_ranking)) return ::triescope::constraint_index_make(request);
  TS_CHECK(request.set, "constraint: no constraint set");
  auto matrix = std::make_shared<const TransitionMatrix>(TransitionMatrix::build(*request.set, request.matrix));
  return std::make_shared<StaticIndexCuda>(std::make_shared<const VntkIndex>(std::move(matrix)), exec);
}

}  // namespace triescope::cuda
