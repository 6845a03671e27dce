// Device upload/download for the CUDA tests; outputs are poisoned before a
// launch so a kernel that skips an element cannot pass by luck.
#pragma once
#include <vector>

#include "cuda/cuda_common.cuh"

namespace triescope::testing {

inline constexpr int kPoisonByte = 0xa5;

template <typename T>
cuda::DeviceBuffer<T> upload(const std::vector<T>& v) {
  cuda::DeviceBuffer<T> d(std::max<size_t>(v.size(), 1), "test upload");
  if (!v.empty()) TS_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "test upload");
  return d;
}
template <typename T>
cuda::DeviceBuffer<T> poisoned(size_t n) {
  cuda::DeviceBuffer<T> d(std::max<size_t>(n, 1), "test output");
  TS_CUDA_CHECK(cudaMemset(d.data(), kPoisonByte, d.bytes()), "test poison");
  return d;
}
template <typename T>
std::vector<T> download(const cuda::DeviceBuffer<T>& d, size_t n) {
  std::vector<T> v(n);
  TS_CUDA_CHECK(cudaDeviceSynchronize(), "test synchronise");
  if (n) TS_CUDA_CHECK(cudaMemcpy(v.data(), d.data(), n * sizeof(T), cudaMemcpyDeviceToHost), "test download");
  return v;
}
inline cuda::DeviceBuffer<cuda::KernelStatus> fresh_status() {
  cuda::DeviceBuffer<cuda::KernelStatus> s(1, "test status");
  cuda::KernelStatus zero;
  TS_CUDA_CHECK(cudaMemcpy(s.data(), &zero, sizeof zero, cudaMemcpyHostToDevice), "test status");
  return s;
}
inline cuda::KernelStatus read_status(const cuda::DeviceBuffer<cuda::KernelStatus>& s) { return download(s, 1)[0]; }

}  // namespace triescope::testing
