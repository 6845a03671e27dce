// CPU twin: argmax_row (core/decode/tree_step.h), which the toy decoder runs
// when no device verifier is installed.
#include "cuda/cuda_common.cuh"
#include "tests/registry/toy_verify.cuh"

namespace triescope::toy {

namespace {

__global__ void toy_argmax_kernel(const float* row, int32_t vocab, int32_t* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int32_t best = 0;
  for (int32_t t = 1; t < vocab; ++t)
    if (row[t] > row[best]) best = t;
  *out = best;
}

}  // namespace

int32_t toy_argmax_device(const float* row, int32_t vocab) {
  TS_CHECK(vocab >= 1, "toy_argmax_device: vocab " << vocab);
  cuda::DeviceBuffer<float> d_row(static_cast<size_t>(vocab), "toy verify: row");
  cuda::DeviceBuffer<int32_t> d_out(1, "toy verify: argmax");
  TS_CUDA_CHECK(cudaMemcpy(d_row.data(), row, static_cast<size_t>(vocab) * sizeof(float), cudaMemcpyHostToDevice), "toy verify: upload row");
  toy_argmax_kernel<<<1, 1>>>(d_row.data(), vocab, d_out.data());
  TS_CUDA_CHECK_LAUNCH("toy_argmax_kernel");
  int32_t out = -1;
  TS_CUDA_CHECK(cudaMemcpy(&out, d_out.data(), sizeof(int32_t), cudaMemcpyDeviceToHost), "toy verify: download argmax");
  return out;
}

}  // namespace triescope::toy
