// CPU twin: core/decode/lookahead.cpp (the verification: argmax_row rows and the matching walk)
#include "cuda/cuda_common.cuh"
#include "cuda/detail/device_block.cuh"
#include "cuda/lookahead_verify.cuh"

namespace triescope::cuda {

namespace {

constexpr unsigned kThreads = 256;

using detail::DeviceBlock;

__global__ void __launch_bounds__(kThreads) greedy_rows_kernel(LookaheadVerifyArgs a) {
  __shared__ float s_val[kThreads];
  __shared__ int32_t s_idx[kThreads];
  DeviceBlock blk;
  for (int32_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int32_t g = argmax_row_block(a.logits + static_cast<int64_t>(r) * a.vocab, a.vocab, s_val, s_idx, blk);
    if (threadIdx.x == 0) a.greedy[r] = g;
  }
}

__global__ void lookahead_match_kernel(LookaheadVerifyArgs a) {
  if (threadIdx.x == 0 && blockIdx.x == 0) lookahead_match_serial(a);
}

}  // namespace

void lookahead_verify(const LookaheadVerifyArgs& a, cudaStream_t stream) {
  TS_CHECK(a.rows >= 1 && a.vocab >= 1, "lookahead_verify (cuda): " << a.rows << " rows of vocab " << a.vocab);
  TS_CHECK(a.root_row >= 0 && a.root_row < a.rows, "lookahead_verify (cuda): root row " << a.root_row << " outside [0, " << a.rows << ")");
  const unsigned blocks = static_cast<unsigned>(a.rows < 65535 ? a.rows : 65535);
  greedy_rows_kernel<<<blocks, kThreads, 0, stream>>>(a);
  TS_CUDA_CHECK_LAUNCH("greedy_rows_kernel");
  lookahead_match_kernel<<<1, 32, 0, stream>>>(a);
  TS_CUDA_CHECK_LAUNCH("lookahead_match_kernel");
}

}  // namespace triescope::cuda
