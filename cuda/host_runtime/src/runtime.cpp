// The host runtime's API half: errors, device memory (tracked, exact-size),
// streams (immediate or deferred), events, graph capture, device queries.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "executor.h"
#include "triescope_cuda_host/control.h"

// The API's opaque handles.
struct CUstream_st {
  unsigned flags = 0;
  struct Op {
    std::function<void()> run;
    uint64_t seq;
  };
  std::deque<Op> queue;         // deferred mode: work not yet run
  struct CUgraph_st* capture = nullptr;
  bool capture_invalidated = false;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  std::thread::id capture_thread;
};
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false, done = false;
  CUstream_st* stream = nullptr;
  std::chrono::steady_clock::time_point when{};
};

namespace triescope::cuda_host {

namespace {

// --- settings -------------------------------------------------------------------------------
// AddressSanitizer cannot follow our stack switches: CUDA threads are OS
// threads there. Under ThreadSanitizer they are annotated TSan fibers
// (fiber.cpp), or OS threads on request.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

double env_double(const char* name, double dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d > 0)) {
    std::fprintf(stderr, "triescope cuda host runtime: %s=%s is not a positive number; using %g\n", name, v, dflt);
    return dflt;
  }
  return d;
}

Settings read_settings() {
  Settings s;
  s.threads = kSanitized ? ThreadMode::threads : ThreadMode::fibers;
  if (const char* v = std::getenv("TRIESCOPE_CUDA_EMU_THREADS"); v && *v) {
    if (std::strcmp(v, "threads") == 0) s.threads = ThreadMode::threads;
    else if (std::strcmp(v, "fibers") == 0 && !kSanitized) s.threads = ThreadMode::fibers;
    else if (std::strcmp(v, "fibers") == 0)
      std::fprintf(stderr, "triescope cuda host runtime: fibers are not run under AddressSanitizer; using threads\n");
    else std::fprintf(stderr, "triescope cuda host runtime: TRIESCOPE_CUDA_EMU_THREADS=%s is not fibers or threads; ignored\n", v);
  }
  if (const char* v = std::getenv("TRIESCOPE_CUDA_EMU_STREAMS"); v && *v) {
    if (std::strcmp(v, "deferred") == 0) s.streams = StreamMode::deferred;
    else if (std::strcmp(v, "immediate") == 0) s.streams = StreamMode::immediate;
    else std::fprintf(stderr, "triescope cuda host runtime: TRIESCOPE_CUDA_EMU_STREAMS=%s is not immediate or deferred; ignored\n", v);
  }
  s.barrier_timeout_s = env_double("TRIESCOPE_CUDA_EMU_BARRIER_TIMEOUT_S", s.barrier_timeout_s);
  s.block_timeout_s = env_double("TRIESCOPE_CUDA_EMU_BLOCK_TIMEOUT_S", s.block_timeout_s);
  if (const char* v = std::getenv("TRIESCOPE_CUDA_EMU_DEVICES"); v && std::strcmp(v, "0") == 0) s.devices = 0;
  return s;
}

Settings& mutable_settings() {
  static Settings s = read_settings();
  return s;
}

// --- errors -----------------------------------------------------------------------------------
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched", "capture was not initiated in this stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};
const ErrorText* error_text(cudaError_t e) {
  for (const auto& t : kErrors)
    if (t.code == e) return &t;
  return nullptr;
}

thread_local cudaError_t t_last = cudaSuccess;
thread_local std::map<int, std::string> t_detail;  // code -> what the runtime found, last time
thread_local std::map<int, std::string> t_text;    // code -> the string cudaGetErrorString returned

struct State {
  std::recursive_mutex mu;  // every API call; kernels run under it
  // A kernel fault ends the context, as on a device: every later call fails.
  cudaError_t sticky = cudaSuccess;
  std::string sticky_detail;
  std::map<uintptr_t, size_t> device_allocs;  // base -> exact size
  std::map<uintptr_t, size_t> pinned_allocs;
  size_t device_bytes = 0;
  CUstream_st legacy;
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> execs;
  uint64_t seq = 0;
  std::map<const void*, int> max_dynamic_shared;  // cudaFuncAttributeMaxDynamicSharedMemorySize
  std::atomic<size_t> kernels{0};
};
State& st() {
  static State* s = new State;  // never destroyed: DeviceBuffers in static objects free after main
  return *s;
}

cudaError_t fail(cudaError_t e, const std::string& detail) {
  t_last = e;
  t_detail[e] = detail;
  return e;
}

void kernel_fault(const std::string& what) {
  State& s = st();
  if (s.sticky == cudaSuccess) {
    s.sticky = cudaErrorLaunchFailure;
    s.sticky_detail = what;
  }
  t_last = cudaErrorLaunchFailure;
  std::fprintf(stderr, "triescope cuda host runtime: kernel fault: %s\n", what.c_str());
  std::fflush(stderr);
}

std::string hex(const void* p) {
  char b[32];
  std::snprintf(b, sizeof b, "%p", p);
  return b;
}

// --- device memory ---------------------------------------------------------------------------
// The allocation holding p, or end().
std::map<uintptr_t, size_t>::const_iterator find_alloc(const std::map<uintptr_t, size_t>& m, const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return m.end();
  --it;
  return a < it->first + std::max<size_t>(it->second, 1) ? it : m.end();
}
bool is_device(const void* p) {
  const auto& m = st().device_allocs;
  return find_alloc(m, p) != m.end();
}

// "" when [p, p + bytes) is inside one device allocation (want_device) or
// touches none (host); else what is wrong, naming `role` and `api`.
std::string check_range(const void* p, size_t bytes, bool want_device, const char* role, const char* api) {
  if (bytes == 0) return {};
  if (p == nullptr) return std::string(api) + ": " + role + " is a null pointer";
  const auto& m = st().device_allocs;
  const auto it = find_alloc(m, p);
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (want_device) {
    if (it == m.end())
      return std::string(api) + ": " + role + " " + hex(p) + " is not device memory (a host pointer where a device pointer is expected, "
                                                            "or memory already freed)";
    if (a + bytes > it->first + it->second)
      return std::string(api) + ": " + role + " " + hex(p) + " covers " + std::to_string(bytes) + " bytes from offset " +
             std::to_string(a - it->first) + " of a " + std::to_string(it->second) + "-byte device allocation: past its end";
    return {};
  }
  if (it != m.end())
    return std::string(api) + ": " + role + " " + hex(p) + " is device memory, but the copy kind names it as host memory";
  // A host range must not run into a device allocation either.
  const auto next = m.lower_bound(a);
  if (next != m.end() && next->first < a + bytes)
    return std::string(api) + ": host " + role + " " + hex(p) + " (+" + std::to_string(bytes) + " bytes) overlaps device memory";
  return {};
}

// Resolves cudaMemcpyDefault in `kind` and checks both ranges against it.
cudaError_t check_copy(void* dst, size_t dst_bytes, const void* src, size_t src_bytes, cudaMemcpyKind& kind, const char* api) {
  if (kind == cudaMemcpyDefault) {
    const bool dd = is_device(dst), sd = is_device(src);
    kind = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice) : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDeviceToDevice)
    return fail(cudaErrorInvalidMemcpyDirection, std::string(api) + ": copy kind " + std::to_string(static_cast<int>(kind)) + " is not a cudaMemcpyKind");
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  std::string e = check_range(dst, dst_bytes, dst_dev, "destination", api);
  if (e.empty()) e = check_range(src, src_bytes, src_dev, "source", api);
  if (!e.empty()) return fail(cudaErrorInvalidValue, e);
  return cudaSuccess;
}
bool source_is_host(cudaMemcpyKind resolved) { return resolved == cudaMemcpyHostToDevice || resolved == cudaMemcpyHostToHost; }

// --- streams ------------------------------------------------------------------------------------
cudaError_t resolve_stream(cudaStream_t h, CUstream_st** out) {
  State& s = st();
  if (h == nullptr || h == cudaStreamLegacy) {
    *out = &s.legacy;
    return cudaSuccess;
  }
  if (!s.streams.count(h)) return fail(cudaErrorInvalidResourceHandle, "stream " + hex(h) + " was never created or is destroyed");
  *out = h;
  return cudaSuccess;
}

bool blocking(const CUstream_st* s) { return !(s->flags & cudaStreamNonBlocking); }

void run_op(const std::function<void()>& op) {
  if (st().sticky != cudaSuccess) return;  // a dead context runs nothing more
  op();
}

void run_front(CUstream_st* s);
// Runs `s`'s queued work enqueued before `seq`.
void drain_before(CUstream_st* s, uint64_t seq) {
  while (!s->queue.empty() && s->queue.front().seq < seq) run_front(s);
}
// Runs the oldest queued op of `s`, after the work it implicitly waits for:
// the legacy stream waits for every blocking stream and they for it.
void run_front(CUstream_st* s) {
  State& g = st();
  CUstream_st::Op op = std::move(s->queue.front());
  s->queue.pop_front();
  if (s == &g.legacy) {
    for (CUstream_st* b : g.streams)
      if (blocking(b)) drain_before(b, op.seq);
  } else if (blocking(s)) {
    drain_before(&g.legacy, op.seq);
  }
  run_op(op.run);
}
void flush(CUstream_st* s) {
  while (!s->queue.empty()) run_front(s);
}
void flush_all() {
  State& g = st();
  flush(&g.legacy);
  for (CUstream_st* s : g.streams) flush(s);
}

// Runs op now (immediate), queues it (deferred), or records it into the
// stream's capture.
void enqueue(CUstream_st* s, std::function<void()> op) {
  State& g = st();
  if (s->capture) {
    s->capture->nodes.push_back(std::move(op));
    return;
  }
  if (settings().streams == StreamMode::immediate) {
    run_op(op);
    return;
  }
  s->queue.push_back(CUstream_st::Op{std::move(op), ++g.seq});
}

bool any_capture_on_this_thread() {
  for (CUstream_st* s : st().streams)
    if (s->capture && (s->capture_mode != cudaStreamCaptureModeThreadLocal || s->capture_thread == std::this_thread::get_id()))
      return true;
  return false;
}

#define TS_HOST_API_BEGIN                                     \
  State& g = st();                                            \
  std::lock_guard<std::recursive_mutex> api_lock_(g.mu);      \
  if (g.sticky != cudaSuccess) return t_last = g.sticky
// CUstream_st* `var` for the API's stream handle `h`, or the API returns the
// error resolve_stream recorded.
#define TS_HOST_RESOLVE_STREAM(h, var) \
  CUstream_st* var = nullptr;          \
  if (resolve_stream(h, &var) != cudaSuccess) return t_last

}  // namespace

// --- control.h ------------------------------------------------------------------------------------
const Settings& settings() { return mutable_settings(); }

void set_thread_mode(ThreadMode m) {
  State& g = st();
  std::lock_guard lk(g.mu);
  flush_all();
  mutable_settings().threads = kSanitized ? ThreadMode::threads : m;
}
void set_stream_mode(StreamMode m) {
  State& g = st();
  std::lock_guard lk(g.mu);
  flush_all();
  mutable_settings().streams = m;
}
std::string describe_settings() {
  const Settings& s = settings();
  return std::string(s.threads == ThreadMode::fibers ? "fibers" : "threads") + ", " +
         (s.streams == StreamMode::immediate ? "immediate" : "deferred") + " streams";
}
size_t live_allocations() {
  std::lock_guard lk(st().mu);
  return st().device_allocs.size();
}
size_t kernels_executed() { return st().kernels.load(); }

// --- device.h: launches -----------------------------------------------------------------------------
void launch_submit(const KernelSite& site, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
                   std::shared_ptr<const KernelBody> body, std::source_location at) {
  State& g = st();
  std::lock_guard<std::recursive_mutex> lk(g.mu);
  auto spec = std::make_shared<LaunchSpec>(LaunchSpec{site, grid, block, shmem, std::move(body), at});
  const std::string name = launch_name(*spec);
  if (g.sticky != cudaSuccess) {
    t_last = g.sticky;
    return;
  }
  CUstream_st* s = nullptr;
  if (resolve_stream(stream, &s) != cudaSuccess) {
    t_detail[cudaErrorInvalidResourceHandle] = "launch of " + name + ": " + t_detail[cudaErrorInvalidResourceHandle];
    return;
  }
  const unsigned long long threads = 1ULL * block.x * block.y * block.z;
  using Lim = DeviceLimits;
  if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > Lim::max_block_dim[0] || block.y > Lim::max_block_dim[1] ||
      block.z > Lim::max_block_dim[2] || threads > Lim::max_threads_per_block) {
    fail(cudaErrorInvalidConfiguration, "launch of " + name + ": block (" + std::to_string(block.x) + "," + std::to_string(block.y) + "," +
                                            std::to_string(block.z) + ") is outside sm_90's limits (at most 1024 threads, " +
                                            "dimensions 1024 x 1024 x 64)");
    return;
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > Lim::max_grid_dim[0] || grid.y > Lim::max_grid_dim[1] ||
      grid.z > Lim::max_grid_dim[2]) {
    fail(cudaErrorInvalidConfiguration, "launch of " + name + ": grid (" + std::to_string(grid.x) + "," + std::to_string(grid.y) + "," +
                                            std::to_string(grid.z) + ") is outside sm_90's limits (2^31 - 1 x 65535 x 65535, none 0)");
    return;
  }
  if (site.max_threads > 0 && threads > site.max_threads) {
    fail(cudaErrorLaunchOutOfResources, "launch of " + name + ": " + std::to_string(threads) + " threads per block, but its __launch_bounds__ allow " +
                                            std::to_string(site.max_threads));
    return;
  }
  size_t shmem_limit = Lim::shared_per_block;
  if (auto it = g.max_dynamic_shared.find(spec->body->function()); it != g.max_dynamic_shared.end())
    shmem_limit = static_cast<size_t>(it->second);
  if (shmem > shmem_limit) {
    fail(cudaErrorInvalidValue, "launch of " + name + ": " + std::to_string(shmem) + " bytes of dynamic shared memory, over the " +
                                    std::to_string(shmem_limit) + " allowed (cudaFuncAttributeMaxDynamicSharedMemorySize raises it)");
    return;
  }
  enqueue(s, [spec] {
    const std::string fault = execute_launch(*spec);
    st().kernels.fetch_add(1);
    if (!fault.empty()) kernel_fault(fault);
  });
}

}  // namespace triescope::cuda_host

using namespace triescope::cuda_host;

// --- errors -------------------------------------------------------------------------------------
cudaError_t cudaGetLastError() {
  State& g = st();
  std::lock_guard lk(g.mu);
  const cudaError_t e = t_last != cudaSuccess ? t_last : g.sticky;
  t_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() {
  State& g = st();
  std::lock_guard lk(g.mu);
  return t_last != cudaSuccess ? t_last : g.sticky;
}
const char* cudaGetErrorName(cudaError_t e) {
  const ErrorText* t = error_text(e);
  return t ? t->name : "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t e) {
  const ErrorText* t = error_text(e);
  std::string text = t ? t->text : "unrecognized error code";
  std::string detail;
  {
    State& g = st();
    std::lock_guard lk(g.mu);
    if (e == g.sticky && !g.sticky_detail.empty()) detail = g.sticky_detail;
    else if (auto it = t_detail.find(e); it != t_detail.end()) detail = it->second;
  }
  if (!detail.empty()) text += " [cuda host runtime: " + detail + "]";
  std::string& slot = t_text[e];
  slot = std::move(text);
  return slot.c_str();
}

// --- device -------------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return fail(cudaErrorInvalidValue, "cudaGetDeviceCount: null count");
  *count = settings().devices;
  if (settings().devices == 0) return fail(cudaErrorNoDevice, "TRIESCOPE_CUDA_EMU_DEVICES=0: the host runtime reports no device");
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (!device) return fail(cudaErrorInvalidValue, "cudaGetDevice: null device");
  *device = 0;
  return settings().devices ? cudaSuccess : fail(cudaErrorNoDevice, "no device");
}
cudaError_t cudaSetDevice(int device) {
  if (device != 0 || settings().devices == 0)
    return fail(cudaErrorInvalidDevice, "cudaSetDevice(" + std::to_string(device) + "): the host runtime has device 0 only");
  return cudaSuccess;
}
namespace {
size_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : size_t{16} << 30;
}
}  // namespace
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (!p) return fail(cudaErrorInvalidValue, "cudaGetDeviceProperties: null prop");
  if (device != 0 || settings().devices == 0) return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties: no device " + std::to_string(device));
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "TrieScope host runtime (sm_90 limits, %s)", describe_settings().c_str());
  p->totalGlobalMem = physical_memory();
  p->sharedMemPerBlock = DeviceLimits::shared_per_block;
  p->sharedMemPerBlockOptin = DeviceLimits::shared_per_block_optin;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = static_cast<int>(DeviceLimits::max_threads_per_block);
  for (int i = 0; i < 3; ++i) {
    p->maxThreadsDim[i] = static_cast<int>(DeviceLimits::max_block_dim[i]);
    p->maxGridSize[i] = static_cast<int>(DeviceLimits::max_grid_dim[i]);
  }
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = DeviceLimits::multiprocessors;
  p->l2CacheSize = DeviceLimits::l2_bytes;
  p->maxThreadsPerMultiProcessor = 2048;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: null value");
  cudaDeviceProp p;
  if (const cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess) return e;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(p.sharedMemPerBlockOptin); break;
    default: return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: attribute " + std::to_string(static_cast<int>(attr)) + " is not emulated");
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  TS_HOST_API_BEGIN;
  flush_all();
  return g.sticky != cudaSuccess ? (t_last = g.sticky) : cudaSuccess;
}
cudaError_t cudaDeviceReset() {
  State& g = st();
  std::lock_guard lk(g.mu);
  g.legacy.queue.clear();
  for (CUstream_st* s : g.streams) s->queue.clear();
  g.sticky = cudaSuccess;
  g.sticky_detail.clear();
  t_last = cudaSuccess;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue, "cudaDriverGetVersion: null");
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue, "cudaRuntimeGetVersion: null");
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  TS_HOST_API_BEGIN;
  const size_t total = physical_memory();
  if (total_bytes) *total_bytes = total;
  if (free_bytes) *free_bytes = total > g.device_bytes ? total - g.device_bytes : 0;
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  TS_HOST_API_BEGIN;
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || static_cast<size_t>(value) > DeviceLimits::shared_per_block_optin)
      return fail(cudaErrorInvalidValue, "cudaFuncSetAttribute: " + std::to_string(value) + " bytes of dynamic shared memory, over sm_90's 227 KiB");
    g.max_dynamic_shared[func] = value;
  }
  return cudaSuccess;
}

// --- memory -------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  TS_HOST_API_BEGIN;
  if (!ptr) return fail(cudaErrorInvalidValue, "cudaMalloc: null result pointer");
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  // Exact size (AddressSanitizer sees the first byte past the end), 256-byte
  // aligned as cudaMalloc's.
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0 || !p)
    return fail(cudaErrorMemoryAllocation, "cudaMalloc of " + std::to_string(bytes) + " bytes: out of host memory");
  g.device_allocs.emplace(reinterpret_cast<uintptr_t>(p), bytes);
  g.device_bytes += bytes;
  *ptr = p;
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  TS_HOST_API_BEGIN;
  if (!ptr) return cudaSuccess;
  flush_all();  // cudaFree synchronises the device
  auto it = g.device_allocs.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g.device_allocs.end())
    return fail(cudaErrorInvalidValue, "cudaFree(" + hex(ptr) + "): not the start of a live device allocation (" +
                                           (is_device(ptr) ? "inside one" : "a host pointer, or freed twice") + ")");
  g.device_bytes -= it->second;
  g.device_allocs.erase(it);
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  TS_HOST_API_BEGIN;
  if (!ptr) return fail(cudaErrorInvalidValue, "cudaMallocHost: null result pointer");
  void* p = nullptr;
  if (posix_memalign(&p, 256, std::max<size_t>(bytes, 1)) != 0)
    return fail(cudaErrorMemoryAllocation, "cudaMallocHost of " + std::to_string(bytes) + " bytes: out of host memory");
  g.pinned_allocs.emplace(reinterpret_cast<uintptr_t>(p), bytes);
  *ptr = p;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* ptr) {
  TS_HOST_API_BEGIN;
  if (!ptr) return cudaSuccess;
  flush_all();
  auto it = g.pinned_allocs.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g.pinned_allocs.end()) return fail(cudaErrorInvalidValue, "cudaFreeHost(" + hex(ptr) + "): not from cudaMallocHost");
  g.pinned_allocs.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

namespace {
// Host sources are read when the copy is enqueued (CUDA stages pageable
// memory before returning), except inside a graph, whose copy node reads the
// host buffer each time the graph runs. Device-side and host-destination
// copies happen when the op runs.
cudaError_t memcpy_async(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream, const char* api) {
  TS_HOST_API_BEGIN;
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (check_copy(dst, bytes, src, bytes, kind, api) != cudaSuccess) return t_last;
  if (bytes == 0) return cudaSuccess;
  if (source_is_host(kind) && !s->capture && settings().streams == StreamMode::deferred) {
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
    enqueue(s, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  } else {
    enqueue(s, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  }
  return cudaSuccess;
}

cudaError_t memcpy2d_async(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                           cudaStream_t stream, const char* api) {
  TS_HOST_API_BEGIN;
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (width > dpitch || width > spitch)
    return fail(cudaErrorInvalidPitchValue, std::string(api) + ": width " + std::to_string(width) + " exceeds a pitch (" +
                                                std::to_string(dpitch) + ", " + std::to_string(spitch) + ")");
  if (width == 0 || height == 0) return cudaSuccess;
  const size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
  if (check_copy(dst, dspan, src, sspan, kind, api) != cudaSuccess) return t_last;
  auto rows = [dst, dpitch, width, height, spitch](const unsigned char* from) {
    for (size_t r = 0; r < height; ++r) std::memmove(static_cast<unsigned char*>(dst) + r * dpitch, from + r * spitch, width);
  };
  if (source_is_host(kind) && !s->capture && settings().streams == StreamMode::deferred) {
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + sspan);
    enqueue(s, [rows, staged] { rows(staged->data()); });
  } else {
    enqueue(s, [rows, src] { rows(static_cast<const unsigned char*>(src)); });
  }
  return cudaSuccess;
}

cudaError_t memset_async(void* dst, int value, size_t bytes, cudaStream_t stream, const char* api) {
  TS_HOST_API_BEGIN;
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (const std::string e = check_range(dst, bytes, true, "destination", api); !e.empty()) return fail(cudaErrorInvalidValue, e);
  if (bytes == 0) return cudaSuccess;
  enqueue(s, [dst, value, bytes] { std::memset(dst, value, bytes); });
  return cudaSuccess;
}

// The synchronous calls: the work goes on the legacy stream (after what the
// blocking streams hold), and the call returns when it is done.
cudaError_t legacy_sync(cudaError_t queued) {
  if (queued != cudaSuccess) return queued;
  State& g = st();
  std::lock_guard lk(g.mu);
  if (any_capture_on_this_thread())
    return fail(cudaErrorStreamCaptureUnsupported, "a synchronous copy or memset while a stream captures a graph");
  flush(&g.legacy);
  return g.sticky != cudaSuccess ? (t_last = g.sticky) : cudaSuccess;
}

// cudaStreamCreateWithFlags and cudaEventCreateWithFlags: a new handle with
// `flags`, among the `live` ones, written to *result (named by `api` when null).
template <typename Handle>
cudaError_t handle_create(Handle** result, unsigned flags, std::set<Handle*>& live, const char* api) {
  if (!result) return fail(cudaErrorInvalidValue, std::string(api) + ": null result pointer");
  auto* h = new Handle;
  h->flags = flags;
  live.insert(h);
  *result = h;
  return cudaSuccess;
}
// cudaGraphDestroy and cudaGraphExecDestroy: `h` taken out of the live ones
// (State::*live) and freed, or error `e` saying `what` when it is not live.
template <typename Handle>
cudaError_t handle_destroy(Handle* h, std::set<Handle*> State::*live, cudaError_t e, const char* what) {
  State& g = st();
  std::lock_guard lk(g.mu);
  if (!(g.*live).erase(h)) return fail(e, what);
  delete h;
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_async(dst, src, bytes, kind, stream, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return legacy_sync(memcpy_async(dst, src, bytes, kind, nullptr, "cudaMemcpy"));
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  return memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream, "cudaMemcpy2DAsync");
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind) {
  return legacy_sync(memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, nullptr, "cudaMemcpy2D"));
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return memset_async(dst, value, bytes, stream, "cudaMemsetAsync");
}
cudaError_t cudaMemset(void* dst, int value, size_t bytes) { return legacy_sync(memset_async(dst, value, bytes, nullptr, "cudaMemset")); }

// --- streams ------------------------------------------------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  TS_HOST_API_BEGIN;
  // A null result pointer is reported first (by handle_create).
  if (stream && (flags & ~unsigned{cudaStreamNonBlocking})) return fail(cudaErrorInvalidValue, "cudaStreamCreateWithFlags: unknown flags");
  return handle_create(stream, flags, g.streams, "cudaStreamCreate");
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  State& g = st();
  std::lock_guard lk(g.mu);
  if (!g.streams.count(stream)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: " + hex(stream) + " is not a live stream");
  flush(stream);  // queued work still completes, as on a device
  for (CUevent_st* e : g.events)
    if (e->stream == stream) e->stream = nullptr;
  if (stream->capture) delete stream->capture;
  g.streams.erase(stream);
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  TS_HOST_API_BEGIN;
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (s->capture) {
    s->capture_invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamSynchronize on a stream that is capturing a graph");
  }
  flush(s);
  return g.sticky != cudaSuccess ? (t_last = g.sticky) : cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  TS_HOST_API_BEGIN;
  TS_HOST_RESOLVE_STREAM(stream, s);
  return s->queue.empty() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  TS_HOST_API_BEGIN;
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (!g.events.count(event)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: not a live event");
  enqueue(s, [event] {
    State& gg = st();
    if (gg.events.count(event) && !event->done && event->stream) flush(event->stream);
  });
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  TS_HOST_API_BEGIN;
  if (stream == nullptr || stream == cudaStreamLegacy)
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture: the legacy default stream cannot capture");
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (s->capture) return fail(cudaErrorIllegalState, "cudaStreamBeginCapture: the stream is already capturing");
  flush(s);
  s->capture = new CUgraph_st;
  s->capture_invalidated = false;
  s->capture_mode = mode;
  s->capture_thread = std::this_thread::get_id();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  State& g = st();
  std::lock_guard lk(g.mu);
  if (graph) *graph = nullptr;
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (!s->capture) return fail(cudaErrorIllegalState, "cudaStreamEndCapture: the stream is not capturing");
  if (s->capture_mode == cudaStreamCaptureModeThreadLocal && s->capture_thread != std::this_thread::get_id())
    return fail(cudaErrorStreamCaptureWrongThread, "cudaStreamEndCapture from another thread than the thread-local capture's");
  CUgraph_st* cap = std::exchange(s->capture, nullptr);
  if (s->capture_invalidated || g.sticky != cudaSuccess) {
    delete cap;
    return fail(cudaErrorStreamCaptureInvalidated, "the capture was invalidated by an earlier error");
  }
  if (!graph) {
    delete cap;
    return fail(cudaErrorInvalidValue, "cudaStreamEndCapture: null graph pointer");
  }
  g.graphs.insert(cap);
  *graph = cap;
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  TS_HOST_API_BEGIN;
  TS_HOST_RESOLVE_STREAM(stream, s);
  if (status)
    *status = !s->capture ? cudaStreamCaptureStatusNone : s->capture_invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

// --- events -------------------------------------------------------------------------------------
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  TS_HOST_API_BEGIN;
  return handle_create(event, flags, g.events, "cudaEventCreate");
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  State& g = st();
  std::lock_guard lk(g.mu);
  if (!g.events.erase(event)) return fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy: not a live event");
  // Queued records still point at it: run them first.
  flush_all();
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  TS_HOST_API_BEGIN;
  if (!g.events.count(event)) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: not a live event");
  TS_HOST_RESOLVE_STREAM(stream, s);
  event->recorded = true;
  event->done = false;
  event->stream = s == &g.legacy ? nullptr : s;
  enqueue(s, [event] {
    event->when = std::chrono::steady_clock::now();
    event->done = true;
  });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  TS_HOST_API_BEGIN;
  if (!g.events.count(event)) return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: not a live event");
  if (!event->recorded || event->done) return cudaSuccess;
  flush(event->stream ? event->stream : &g.legacy);
  return g.sticky != cudaSuccess ? (t_last = g.sticky) : cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  TS_HOST_API_BEGIN;
  if (!g.events.count(event)) return fail(cudaErrorInvalidResourceHandle, "cudaEventQuery: not a live event");
  return !event->recorded || event->done ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  TS_HOST_API_BEGIN;
  if (!ms) return fail(cudaErrorInvalidValue, "cudaEventElapsedTime: null result pointer");
  if (!g.events.count(start) || !g.events.count(end)) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: not a live event");
  if ((start->flags | end->flags) & cudaEventDisableTiming)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event was created with cudaEventDisableTiming");
  if (!start->recorded || !end->recorded) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event was never recorded");
  if (!start->done || !end->done) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}

// --- graphs -------------------------------------------------------------------------------------
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  TS_HOST_API_BEGIN;
  if (!exec) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate: null result pointer");
  if (!g.graphs.count(graph)) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate: not a live graph");
  auto* x = new CUgraphExec_st;
  x->nodes = graph->nodes;
  g.execs.insert(x);
  *exec = x;
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  TS_HOST_API_BEGIN;
  if (!g.execs.count(exec)) return fail(cudaErrorInvalidResourceHandle, "cudaGraphLaunch: not a live executable graph");
  TS_HOST_RESOLVE_STREAM(stream, s);
  for (const auto& node : exec->nodes) enqueue(s, node);
  return g.sticky != cudaSuccess ? (t_last = g.sticky) : cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return handle_destroy(graph, &State::graphs, cudaErrorInvalidValue, "cudaGraphDestroy: not a live graph");
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  return handle_destroy(exec, &State::execs, cudaErrorInvalidResourceHandle, "cudaGraphExecDestroy: not a live executable graph");
}
