// Host-side helpers shared by every launcher: checked CUDA calls that throw
// triescope::Error with a name, an RAII device buffer, and the kernels' error
// word. Host code only (no kernels here), so plain C++ translation units may
// include it.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "core/common/error.h"

// TS_CUDA_CHECK(cudaMemcpyAsync(...), "synthetic model: upload mask")
#define TS_CUDA_CHECK(call, what)                                                                     \
  do {                                                                                                \
    const cudaError_t ts_cuda_e_ = (call);                                                            \
    if (ts_cuda_e_ != cudaSuccess)                                                                    \
      TS_FAIL("CUDA error in " << what << ": " << cudaGetErrorName(ts_cuda_e_) << " ("                \
                               << cudaGetErrorString(ts_cuda_e_) << ") at " << __FILE__ << ":" << __LINE__); \
  } while (0)

// Right after a <<<...>>> launch: catches bad configurations and sticky errors.
#define TS_CUDA_CHECK_LAUNCH(kernel_name) TS_CUDA_CHECK(cudaGetLastError(), "launch of " << kernel_name)

namespace triescope::cuda {

// Number of usable CUDA devices; 0 when the runtime reports none or fails
// (no driver, no device). `why` receives the runtime's answer.
int device_count(std::string* why = nullptr);
// Throws Error "<who>: no usable CUDA device (<the runtime's answer>)" when
// there is none.
void require_device(const char* who);

// What a kernel found wrong with its input. Kernels write the first error
// into a KernelStatus in device memory (atomicCAS on code), so a launcher
// stays asynchronous; the caller reads it back after synchronising.
enum class KernelError : int32_t {
  none = 0,
  slot_out_of_range = 1,  // a node's slot or a mask bit outside [0, num_slots)
  node_out_of_range = 2,  // a node or parent id outside [0, num_nodes)
  cycle = 3,              // a parent chain longer than num_nodes
  src_out_of_range = 4,   // a compaction source slot outside [0, old_num_slots)
  empty_slot = 5,         // a query reads a KV slot nothing was written to
  row_out_of_range = 6,   // an incremental-mask table row outside [0, table_rows)
  state_out_of_range = 7, // a constraint state outside [-1, num_states) (-1 = dead beam)
  step_out_of_range = 8,  // a constraint step outside [0, L)
  bad_logit = 9,          // a NaN or +inf logit (a = row, b = token)
};
struct KernelStatus {
  int32_t code = 0;  // KernelError
  int32_t a = -1;    // first offending index (query, node, new slot)
  int32_t b = -1;    // its bad value (slot, parent, source)
};
const char* kernel_error_name(KernelError e);

// Owns device memory for `n` elements of T. Move-only.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n, const char* what = "device buffer") { resize_discard(n, what); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  // Reallocates to exactly n elements when n differs; old contents are lost.
  void resize_discard(size_t n, const char* what = "device buffer") {
    if (n == n_) return;
    release();
    if (n == 0) return;
    void* p = nullptr;
    TS_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc of " << n * sizeof(T) << " bytes for " << what);
    p_ = static_cast<T*>(p);
    n_ = n;
  }
  // Grows (doubling) to hold at least n elements; old contents are lost.
  void reserve_discard(size_t n, const char* what = "device buffer") {
    if (n <= n_) return;
    size_t c = n_ ? n_ : 64;
    while (c < n) c *= 2;
    resize_discard(c, what);
  }
  T* data() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  void swap(DeviceBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }

 private:
  void release() noexcept {
    if (p_) cudaFree(p_);  // no throw from a destructor path; a failing free leaks at worst
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Synchronises `stream`, reads `status` back and throws Error naming `what`,
// the error and its indices when a kernel flagged bad input. Resets it.
void status_check(KernelStatus* status_dev, cudaStream_t stream, const std::string& what);

// Captures what `launches` enqueues on `stream` (a non-default stream) as a
// CUDA graph and instantiates it; throws Error naming `what` on a failure,
// with the capture ended and nothing leaked.
cudaGraphExec_t graph_capture(cudaStream_t stream, const std::function<void()>& launches, const std::string& what);

}  // namespace triescope::cuda
