#include "cuda/host_waits.h"

#include <atomic>

namespace triescope::cuda {

namespace {
std::atomic<int64_t> g_downloads{0}, g_download_bytes{0}, g_syncs{0};
}  // namespace

HostWaitCounts host_wait_counts() {
  return {g_downloads.load(std::memory_order_relaxed), g_download_bytes.load(std::memory_order_relaxed),
          g_syncs.load(std::memory_order_relaxed)};
}

HostWaitCounts operator-(const HostWaitCounts& a, const HostWaitCounts& b) {
  return {a.downloads - b.downloads, a.download_bytes - b.download_bytes, a.syncs - b.syncs};
}

cudaError_t counted_download(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  g_downloads.fetch_add(1, std::memory_order_relaxed);
  g_download_bytes.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream);
}

cudaError_t counted_stream_sync(cudaStream_t stream) {
  g_syncs.fetch_add(1, std::memory_order_relaxed);
  return cudaStreamSynchronize(stream);
}

}  // namespace triescope::cuda
