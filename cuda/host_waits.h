// The one way the host waits on the device or reads device memory back
// (issue 33's step budget): every device-to-host copy and every stream
// synchronisation in cuda/ goes through these, counted, so a test can hold a
// decode step to a budget of waits and bytes (tests/cuda/test_step_budget.cpp,
// ctest label step_budget) and scripts/check_host_waits.py (ctest
// host_waits) refuses a raw cudaMemcpy...DeviceToHost or
// cudaStreamSynchronize anywhere else in cuda/.
// Plain C++ header (cudaStream_t from the runtime API only).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace triescope::cuda {

// Totals since the process started (every thread, every stream).
struct HostWaitCounts {
  int64_t downloads = 0;       // device-to-host copies enqueued
  int64_t download_bytes = 0;  // their bytes
  int64_t syncs = 0;           // host waits on a stream
};
HostWaitCounts host_wait_counts();
HostWaitCounts operator-(const HostWaitCounts& a, const HostWaitCounts& b);

// cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
// counted; callers check the result with TS_CUDA_CHECK as for the call it
// stands for. A copy of 0 bytes is not enqueued and not counted.
cudaError_t counted_download(void* dst, const void* src, size_t bytes, cudaStream_t stream);
// cudaStreamSynchronize(stream), counted.
cudaError_t counted_stream_sync(cudaStream_t stream);

}  // namespace triescope::cuda
