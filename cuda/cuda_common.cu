// CPU twin: none (host-side helpers of cuda_common.cuh, no kernel)
#include "cuda/cuda_common.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    (void)cudaGetLastError();  // clear it so later checks are not confused
    return 0;
  }
  if (why) *why = std::to_string(n) + " device(s)";
  return n;
}

void require_device(const char* who) {
  std::string why;
  TS_CHECK(device_count(&why) > 0, who << ": no usable CUDA device (" << why << ")");
}

const char* kernel_error_name(KernelError e) {
  switch (e) {
    case KernelError::none: return "none";
    case KernelError::slot_out_of_range: return "slot out of range";
    case KernelError::node_out_of_range: return "node id out of range";
    case KernelError::cycle: return "parent chain has a cycle";
    case KernelError::src_out_of_range: return "compaction source slot out of range";
    case KernelError::empty_slot: return "reads an empty KV slot";
    case KernelError::row_out_of_range: return "mask table row out of range";
    case KernelError::state_out_of_range: return "constraint state out of range";
    case KernelError::step_out_of_range: return "constraint step out of range";
    case KernelError::bad_logit: return "logit is NaN or +inf (index: row, value: token)";
  }
  return "unknown kernel error";
}

void status_check(KernelStatus* status_dev, cudaStream_t stream, const std::string& what) {
  KernelStatus st;
  TS_CUDA_CHECK(counted_download(&st, status_dev, sizeof st, stream), what << ": read status");
  TS_CUDA_CHECK(counted_stream_sync(stream), what << ": synchronise");
  if (st.code == 0) return;
  TS_CUDA_CHECK(cudaMemsetAsync(status_dev, 0, sizeof(int32_t), stream), what << ": reset status");
  TS_FAIL(what << ": " << kernel_error_name(static_cast<KernelError>(st.code)) << " (index " << st.a << ", value " << st.b
               << ")");
}

cudaGraphExec_t graph_capture(cudaStream_t stream, const std::function<void()>& launches, const std::string& what) {
  cudaGraph_t graph = nullptr;
  TS_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), what << ": begin graph capture");
  try {
    launches();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  TS_CUDA_CHECK(cudaStreamEndCapture(stream, &graph), what << ": end graph capture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  TS_CUDA_CHECK(e, what << ": instantiate graph");
  return exec;
}

}  // namespace triescope::cuda
