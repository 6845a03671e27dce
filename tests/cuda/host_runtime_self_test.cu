// Self-tests of the host CUDA runtime: the net catches what it must. Kernels
// with planted mistakes (a divergent __syncthreads, a warp shuffle one lane
// skips, a read of shared memory nobody wrote, a host read without the
// stream sync it needs, a __syncthreads removed, an off-by-one read) and the
// API misuse a device refuses. Compiled only on the host runtime (rewritten
// like cuda/*.cu). The [tsan] and [asan] cases run in the sanitizer builds,
// where ctest expects the sanitizer's report naming this file.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "triescope_cuda_host/control.h"

namespace {

using triescope::cuda_host::StreamMode;
using triescope::cuda_host::ThreadMode;

// The runtime's answer to the last failing call, in full.
std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// A kernel fault kills the context, as on a device; the next test needs a fresh one.
void reset() { REQUIRE(cudaDeviceReset() == cudaSuccess); }

template <typename T>
T* device_alloc(size_t n) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  return static_cast<T*>(p);
}

// --- kernels with planted mistakes -------------------------------------------------------------------
__global__ void divergent_barrier_kernel(int* out) {
  if (threadIdx.x >= 32) return;  // half the block leaves...
  __syncthreads();                // ...and never reaches this barrier
  out[threadIdx.x] = 1;
}

__global__ void two_barriers_kernel(int* out) {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();
  } else {
    __syncthreads();  // another barrier: UB in CUDA
  }
  out[threadIdx.x] = 1;
}

__global__ void skipped_shuffle_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x % 32 != 5) v = __shfl_down_sync(0xffffffffu, v, 1);  // lane 5 never arrives
  out[threadIdx.x] = v;
}

// Reads its right neighbour's shared slot; the last thread's neighbour slot
// is written by nobody (planted = true) or by the last thread (planted = false).
__global__ void neighbour_kernel(float* out, bool planted) {
  __shared__ float s[64];
  s[threadIdx.x] = static_cast<float>(threadIdx.x);
  if (!planted && threadIdx.x == blockDim.x - 1) s[blockDim.x] = -1.0f;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x + 1];
}

__global__ void write_kernel(int* p, int value) { p[threadIdx.x] = value; }

// log_softmax_kernel's sum reduction (cuda/topk_candidates.cu) over one row, as
// written (planted = false) or with the barrier after the shared store
// removed (planted = true): the first round then reads neighbours' slots
// while they are being written.
__global__ void block_sum_kernel(const double* x, int n, double* out, bool planted) {
  __shared__ double s_red[256];
  double sum = 0.0;
  for (int v = threadIdx.x; v < n; v += blockDim.x) sum += x[v];
  s_red[threadIdx.x] = sum;
  if (!planted) __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) s_red[threadIdx.x] += s_red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = s_red[0];
}

// Reads x[i + 1] for every i < n: one element past the end (planted) or
// only inside it.
__global__ void shift_kernel(const float* x, int n, float* out, bool planted) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const int last = planted ? n : n - 1;
  out[i] = i + 1 <= last ? x[i + 1] : 0.0f;
}

// --- kernels that must work ------------------------------------------------------------------------
__global__ void warp_ops_kernel(int* down, int* xr, int* idx, int* up, unsigned* ballot) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  down[threadIdx.x] = __shfl_down_sync(0xffffffffu, lane * 10, 3);
  xr[threadIdx.x] = __shfl_xor_sync(0xffffffffu, lane * 10, 1);
  idx[threadIdx.x] = __shfl_sync(0xffffffffu, lane * 10, 7);
  up[threadIdx.x] = __shfl_up_sync(0xffffffffu, lane * 10, 2, 16);
  ballot[threadIdx.x] = __ballot_sync(0xffffffffu, lane % 3 == 0);
}

__global__ void count_kernel(unsigned long long* counter, int* first) {
  atomicAdd(counter, 1ULL);
  atomicCAS(first, -1, static_cast<int>(blockIdx.x));
}

__global__ void __launch_bounds__(128) bounded_kernel(int* out) { out[threadIdx.x] = 1; }

__global__ void dynamic_shared_kernel(int* out) {
  extern __shared__ int s_dyn[];
  s_dyn[threadIdx.x] = static_cast<int>(threadIdx.x) * 2;
  __syncthreads();
  out[threadIdx.x] = s_dyn[blockDim.x - 1 - threadIdx.x];
}

__global__ void add_one_kernel(int* p) { p[threadIdx.x] += 1; }

// The fault the kernel just launched must raise (a sticky launch failure),
// in full; at the launch in immediate mode, at the sync in deferred mode.
std::string launch_fault_text() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  REQUIRE(e == cudaErrorLaunchFailure);
  return error_text(e);
}

}  // namespace

// --- faults a device would hang or silently mis-compute on ---------------------------------------------------
TEST_CASE("host runtime: a __syncthreads some threads never reach is a named fault", "[cuda_host][fault]") {
  const ThreadMode mode = GENERATE(ThreadMode::fibers, ThreadMode::threads);
  triescope::cuda_host::set_thread_mode(mode);
  int* out = device_alloc<int>(64);
  divergent_barrier_kernel<<<1, 64>>>(out);
  const std::string text = launch_fault_text();
  CAPTURE(text);
  CHECK(text.find("divergent_barrier_kernel") != std::string::npos);
  CHECK(text.find("host_runtime_self_test.cu:38") != std::string::npos);  // the __syncthreads line
  CHECK(text.find("exited") != std::string::npos);
  CHECK(text.find("block (0,0,0)") != std::string::npos);
  reset();
  cudaFree(out);
  triescope::cuda_host::set_thread_mode(ThreadMode::fibers);
}

TEST_CASE("host runtime: threads at two different __syncthreads are a named fault", "[cuda_host][fault]") {
  int* out = device_alloc<int>(64);
  two_barriers_kernel<<<1, 64>>>(out);
  const std::string text = launch_fault_text();
  CAPTURE(text);
  CHECK(text.find("divergent __syncthreads") != std::string::npos);
  CHECK(text.find("host_runtime_self_test.cu:44") != std::string::npos);
  CHECK(text.find("host_runtime_self_test.cu:46") != std::string::npos);
  reset();
  cudaFree(out);
}

TEST_CASE("host runtime: a warp shuffle one lane never reaches is a named fault", "[cuda_host][fault]") {
  int* out = device_alloc<int>(64);
  skipped_shuffle_kernel<<<1, 64>>>(out);
  const std::string text = launch_fault_text();
  CAPTURE(text);
  CHECK(text.find("__shfl_down_sync") != std::string::npos);
  CHECK(text.find("host_runtime_self_test.cu:53") != std::string::npos);
  CHECK(text.find("lane 5") != std::string::npos);
  reset();
  cudaFree(out);
}

TEST_CASE("host runtime: shared memory nobody wrote reads as poison (NaN)", "[cuda_host][fault]") {
  float* out = device_alloc<float>(32);
  std::vector<float> h(32);
  neighbour_kernel<<<1, 32>>>(out, false);
  REQUIRE(cudaMemcpy(h.data(), out, 32 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(h[31] == -1.0f);
  CHECK(h[0] == 1.0f);
  neighbour_kernel<<<1, 32>>>(out, true);
  REQUIRE(cudaMemcpy(h.data(), out, 32 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(std::isnan(h[31]));  // s[32] was never written in this block
  CHECK(h[30] == 31.0f);
  cudaFree(out);
}

TEST_CASE("host runtime: deferred streams catch a host read without the stream sync it needs", "[cuda_host][streams]") {
  triescope::cuda_host::set_stream_mode(StreamMode::deferred);
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  int* d = device_alloc<int>(32);
  std::vector<int> h(32, -1);
  write_kernel<<<1, 32, 0, s>>>(d, 42);
  REQUIRE(cudaMemcpyAsync(h.data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(h[0] == -1);  // read before cudaStreamSynchronize: nothing has run yet
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(h[0] == 42);
  // A synchronous cudaMemcpy waits for the legacy stream only, not for a
  // non-blocking stream's kernel.
  write_kernel<<<1, 32, 0, s>>>(d, 7);
  REQUIRE(cudaMemcpy(h.data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(h[0] == 42);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaMemcpy(h.data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(h[0] == 7);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  cudaFree(d);
  triescope::cuda_host::set_stream_mode(StreamMode::immediate);
}

TEST_CASE("host runtime: pointers and copy kinds are checked as a device would", "[cuda_host][memory]") {
  int* d = device_alloc<int>(16);
  std::vector<int> h(32, 0);
  cudaError_t e = cudaMemcpy(h.data(), h.data() + 16, 16 * sizeof(int), cudaMemcpyHostToDevice);  // host destination
  CHECK(e == cudaErrorInvalidValue);
  CHECK(error_text(e).find("not device memory") != std::string::npos);
  (void)cudaGetLastError();
  e = cudaMemcpy(d, h.data(), 16 * sizeof(int), cudaMemcpyDeviceToHost);  // kind says d is host
  CHECK(e == cudaErrorInvalidValue);
  CHECK(error_text(e).find("is device memory") != std::string::npos);
  (void)cudaGetLastError();
  e = cudaMemcpy(d, h.data(), 17 * sizeof(int), cudaMemcpyHostToDevice);  // one past the allocation
  CHECK(e == cudaErrorInvalidValue);
  CHECK(error_text(e).find("past its end") != std::string::npos);
  (void)cudaGetLastError();
  CHECK(cudaFree(h.data()) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  CHECK(cudaMemcpy(d, h.data(), 16 * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaFree(d) == cudaErrorInvalidValue);  // freed twice
  (void)cudaGetLastError();
}

TEST_CASE("host runtime: launches over sm_90's limits fail with CUDA's errors", "[cuda_host][launch]") {
  int* d = device_alloc<int>(2048);
  write_kernel<<<1, 1025>>>(d, 1);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  write_kernel<<<dim3(1, 65536), 32>>>(d, 1);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  bounded_kernel<<<1, 256>>>(d);  // __launch_bounds__(128)
  CHECK(cudaGetLastError() == cudaErrorLaunchOutOfResources);
  dynamic_shared_kernel<<<1, 32, 49 * 1024>>>(d);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  bounded_kernel<<<1, 128>>>(d);
  CHECK(cudaGetLastError() == cudaSuccess);
  cudaFree(d);
}

TEST_CASE("host runtime: warp shuffles, ballots, atomics and dynamic shared memory follow CUDA", "[cuda_host][semantics]") {
  const ThreadMode mode = GENERATE(ThreadMode::fibers, ThreadMode::threads);
  triescope::cuda_host::set_thread_mode(mode);
  int* down = device_alloc<int>(64);
  int* xr = device_alloc<int>(64);
  int* idx = device_alloc<int>(64);
  int* up = device_alloc<int>(64);
  unsigned* ballot = device_alloc<unsigned>(64);
  warp_ops_kernel<<<1, 64>>>(down, xr, idx, up, ballot);
  std::vector<int> a(64), b(64), c(64), u(64);
  std::vector<unsigned> bl(64);
  REQUIRE(cudaMemcpy(a.data(), down, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(b.data(), xr, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(c.data(), idx, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(u.data(), up, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(bl.data(), ballot, 64 * sizeof(unsigned), cudaMemcpyDeviceToHost) == cudaSuccess);
  unsigned want_ballot = 0;
  for (int l = 0; l < 32; l += 3) want_ballot |= 1u << l;
  for (int t = 0; t < 64; ++t) {
    const int l = t % 32;
    CHECK(a[t] == (l + 3 < 32 ? (l + 3) * 10 : l * 10));  // past the end: own value
    CHECK(b[t] == (l ^ 1) * 10);
    CHECK(c[t] == 70);
    CHECK(u[t] == (l % 16 >= 2 ? (l - 2) * 10 : l * 10));  // width 16: segments of 16 lanes
    CHECK(bl[t] == want_ballot);
  }
  unsigned long long* counter = device_alloc<unsigned long long>(1);
  int* first = device_alloc<int>(1);
  REQUIRE(cudaMemset(counter, 0, sizeof(unsigned long long)) == cudaSuccess);
  REQUIRE(cudaMemset(first, 0xff, sizeof(int)) == cudaSuccess);
  count_kernel<<<7, 96>>>(counter, first);
  unsigned long long n = 0;
  int f = -5;
  REQUIRE(cudaMemcpy(&n, counter, sizeof n, cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(&f, first, sizeof f, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(n == 7 * 96);
  CHECK(f >= 0);
  CHECK(f < 7);
  int* rev = device_alloc<int>(64);
  dynamic_shared_kernel<<<1, 64, 64 * sizeof(int)>>>(rev);
  REQUIRE(cudaMemcpy(a.data(), rev, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int t = 0; t < 64; ++t) CHECK(a[t] == (63 - t) * 2);
  for (void* p : {static_cast<void*>(down), static_cast<void*>(xr), static_cast<void*>(idx), static_cast<void*>(up),
                  static_cast<void*>(ballot), static_cast<void*>(counter), static_cast<void*>(first), static_cast<void*>(rev)})
    cudaFree(p);
  triescope::cuda_host::set_thread_mode(ThreadMode::fibers);
}

TEST_CASE("host runtime: a captured graph replays its kernels and copies", "[cuda_host][streams]") {
  const StreamMode mode = GENERATE(StreamMode::immediate, StreamMode::deferred);
  triescope::cuda_host::set_stream_mode(mode);
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  int* d = device_alloc<int>(32);
  REQUIRE(cudaMemset(d, 0, 32 * sizeof(int)) == cudaSuccess);
  std::vector<int> h(32, -1);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  add_one_kernel<<<1, 32, 0, s>>>(d);
  REQUIRE(cudaMemcpyAsync(h.data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);  // not while capturing...
  (void)cudaGetLastError();
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);  // ...and it spoils the capture
  (void)cudaGetLastError();
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  add_one_kernel<<<1, 32, 0, s>>>(d);
  REQUIRE(cudaMemcpyAsync(h.data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  CHECK(h[0] == -1);  // captured, not run
  cudaGraphExec_t x = nullptr;
  REQUIRE(cudaGraphInstantiate(&x, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(x, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(x, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(h[0] == 2);
  CHECK(h[31] == 2);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaFree(d);
  triescope::cuda_host::set_stream_mode(StreamMode::immediate);
}

// --- the sanitizer builds' cases (ctest checks their reports) ------------------------------------------------
namespace {
double block_sum(bool planted) {
  std::vector<double> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 17);
  double* dx = device_alloc<double>(x.size());
  double* out = device_alloc<double>(1);
  REQUIRE(cudaMemcpy(dx, x.data(), x.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
  block_sum_kernel<<<1, 256>>>(dx, static_cast<int>(x.size()), out, planted);
  double r = 0;
  REQUIRE(cudaMemcpy(&r, out, sizeof r, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(dx);
  cudaFree(out);
  return r;
}
float shift_sum(bool planted) {
  const int n = 300;
  std::vector<float> x(n, 1.0f);
  float* dx = device_alloc<float>(n);  // exactly n: one past is outside the allocation
  float* out = device_alloc<float>(n);
  REQUIRE(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  shift_kernel<<<3, 128>>>(dx, n, out, planted);
  std::vector<float> h(n);
  REQUIRE(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(dx);
  cudaFree(out);
  float s = 0;
  for (float v : h) s += v;
  return s;
}
}  // namespace

TEST_CASE("host runtime: the block sum with all its barriers is race-free", "[tsan][clean]") { CHECK(block_sum(false) == 7979.0); }
TEST_CASE("host runtime: the block sum without the barrier after the store races", "[tsan][planted]") { block_sum(true); }
TEST_CASE("host runtime: the shifted read inside the buffer is clean", "[asan][clean]") { CHECK(shift_sum(false) == 299.0f); }
TEST_CASE("host runtime: the shifted read one past the buffer overflows", "[asan][planted]") { shift_sum(true); }

// --- launch statistics: what the structure tests of the selection kernels rely on ---------------------
namespace {
// Block b runs b + 1 barrier rounds; each of its 2 warps one shuffle per round.
__global__ void counted_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  for (unsigned r = 0; r <= blockIdx.x; ++r) {
    v = __shfl_xor_sync(0xffffffffu, v, 1);
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
}  // namespace

TEST_CASE("host runtime: launch_stats counts blocks, barrier rounds and warp collectives per launch", "[cuda_host][stats]") {
  namespace host = triescope::cuda_host;
  int* out = device_alloc<int>(3 * 64);
  host::reset_launch_stats();
  counted_kernel<<<3, 64>>>(out);
  counted_kernel<<<1, 64>>>(out);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(out);
  const std::vector<host::LaunchStat> s = host::launch_stats();
  REQUIRE(s.size() == 2);
  CHECK(s[0].kernel == "counted_kernel");
  CHECK(s[0].blocks == 3);
  CHECK(s[0].threads_per_block == 64);
  CHECK(s[0].barrier_rounds_max == 3);          // block 2: 3 rounds
  CHECK(s[0].barrier_rounds_total == 1 + 2 + 3);
  CHECK(s[0].warp_collectives_max == 3 * 2);    // 2 warps x 3 rounds
  CHECK(s[0].warp_collectives_total == (1 + 2 + 3) * 2);
  CHECK(s[1].blocks == 1);
  CHECK(s[1].barrier_rounds_max == 1);
  const std::string json = host::launch_stats_json();
  CHECK(json.find("\"counted_kernel\": {\"launches\": 2, \"blocks\": 4, \"barrier_rounds_max\": 3") != std::string::npos);
  host::reset_launch_stats();
  CHECK(host::launch_stats().empty());
}
