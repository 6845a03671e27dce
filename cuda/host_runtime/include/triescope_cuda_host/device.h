// TrieScope's host CUDA runtime, device side: what a .cu file sees when it is
// compiled for the host (forced include, after cu_host_rewrite turned its
// <<<...>>> launches and __shared__ declarations into the calls below).
// Every CUDA thread of a block runs as its own fiber (or OS thread), so
// __syncthreads is a real barrier over the block and a warp shuffle a real
// exchange between 32 lanes. docs/cuda.md, "Host runtime".
#pragma once
#include <cuda_runtime.h>
#include <math.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

// Qualifiers: device code is plain host code here.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __constant__
#define __restrict__ __restrict
// A __shared__ the rewrite did not see (in a header) must not compile as a
// per-thread variable: this name in the compiler's error says why.
#define __shared__ triescope_cuda_host_shared_declaration_outside_a_rewritten_cu_file

namespace triescope::cuda_host {

// The CUDA thread a fiber or OS thread is running now.
struct ThreadCtx {
  uint3 thread_idx{0, 0, 0};
  uint3 block_idx{0, 0, 0};
  dim3 block_dim;
  dim3 grid_dim;
  class BlockRun* block = nullptr;
  uint32_t linear = 0;  // threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)
};
extern thread_local ThreadCtx* tl_thread;
// The current CUDA thread; a named fatal error outside a kernel.
ThreadCtx& this_thread();

// Block-wide operations, implemented by the executor.
void block_barrier(std::source_location at);
enum class WarpOp : uint8_t { shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, any, all, sync };
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int operand, int width, std::source_location at);
// Per-block storage of one __shared__ declaration (tag: its address), poisoned
// at first use in each block; exact size, so AddressSanitizer sees overruns.
void* block_shared_storage(const void* tag, size_t bytes, size_t align);
// The launch's dynamic shared memory (exact size, poisoned per block).
void* block_dynamic_shared_storage();

template <typename T>
T& block_shared(const void* tag) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                "__shared__ variables must be trivial, as in CUDA");
  return *static_cast<T*>(block_shared_storage(tag, sizeof(T), alignof(T)));
}
template <typename T>
T* block_dynamic_shared() {
  return static_cast<T*>(block_dynamic_shared_storage());
}

// --- launches -----------------------------------------------------------------------
// What the rewrite knows of a kernel: its name as written at the launch and
// its __launch_bounds__ (0 when it has none).
struct KernelSite {
  const char* name;
  unsigned max_threads;
  unsigned min_blocks;
};
// The body every CUDA thread of the launch runs: the kernel on its own copy
// of the arguments.
class KernelBody {
 public:
  virtual ~KernelBody() = default;
  virtual void run() const = 0;
  virtual const void* function() const = 0;  // the kernel, as cudaFuncSetAttribute names it
};
// Checks the configuration (as CUDA does, with CUDA's error) and runs or
// enqueues the launch on `stream`.
void launch_submit(const KernelSite& site, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
                   std::shared_ptr<const KernelBody> body, std::source_location at);

template <typename... P>
class KernelBodyOf final : public KernelBody {
 public:
  template <typename... A>
  KernelBodyOf(void (*fn)(P...), A&&... a) : fn_(fn), args_(std::forward<A>(a)...) {}
  void run() const override { std::apply(fn_, args_); }
  const void* function() const override { return reinterpret_cast<const void*>(fn_); }

 private:
  void (*fn_)(P...);
  std::tuple<std::decay_t<P>...> args_;
};

template <typename... P>
class KernelLauncher {
 public:
  KernelLauncher(void (*fn)(P...), KernelSite site, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream, std::source_location at)
      : fn_(fn), site_(site), grid_(grid), block_(block), shmem_(shmem), stream_(stream), at_(at) {}
  template <typename... A>
  void operator()(A&&... a) const {
    static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong number of arguments");
    launch_submit(site_, grid_, block_, shmem_, stream_, std::make_shared<const KernelBodyOf<P...>>(fn_, std::forward<A>(a)...), at_);
  }

 private:
  void (*fn_)(P...);
  KernelSite site_;
  dim3 grid_, block_;
  size_t shmem_;
  cudaStream_t stream_;
  std::source_location at_;
};

// kernel<<<grid, block, shmem, stream>>>(args) is rewritten to
// launch_kernel(kernel, site, grid, block, shmem, stream)(args).
template <typename... P>
KernelLauncher<P...> launch_kernel(void (*fn)(P...), KernelSite site, dim3 grid, dim3 block, size_t shmem = 0, cudaStream_t stream = nullptr,
                                   std::source_location at = std::source_location::current()) {
  return KernelLauncher<P...>(fn, site, grid, block, shmem, stream, at);
}

template <typename T>
uint64_t lane_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8), "warp shuffles move 4- or 8-byte values");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
T lane_value(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

}  // namespace triescope::cuda_host

// --- built-in variables ---------------------------------------------------------------
#define threadIdx (::triescope::cuda_host::this_thread().thread_idx)
#define blockIdx (::triescope::cuda_host::this_thread().block_idx)
#define blockDim (::triescope::cuda_host::this_thread().block_dim)
#define gridDim (::triescope::cuda_host::this_thread().grid_dim)
inline constexpr int warpSize = 32;

// --- synchronisation and warp functions ---------------------------------------------------
inline void __syncthreads(std::source_location at = std::source_location::current()) {
  ::triescope::cuda_host::block_barrier(at);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location at = std::source_location::current()) {
  ::triescope::cuda_host::warp_collective(::triescope::cuda_host::WarpOp::sync, mask, 0, 0, 32, at);
}
template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32, std::source_location at = std::source_location::current()) {
  namespace h = ::triescope::cuda_host;
  return h::lane_value<T>(h::warp_collective(h::WarpOp::shfl_idx, mask, h::lane_bits(var), src_lane, width, at));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32, std::source_location at = std::source_location::current()) {
  namespace h = ::triescope::cuda_host;
  return h::lane_value<T>(h::warp_collective(h::WarpOp::shfl_up, mask, h::lane_bits(var), static_cast<int>(delta), width, at));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32, std::source_location at = std::source_location::current()) {
  namespace h = ::triescope::cuda_host;
  return h::lane_value<T>(h::warp_collective(h::WarpOp::shfl_down, mask, h::lane_bits(var), static_cast<int>(delta), width, at));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32, std::source_location at = std::source_location::current()) {
  namespace h = ::triescope::cuda_host;
  return h::lane_value<T>(h::warp_collective(h::WarpOp::shfl_xor, mask, h::lane_bits(var), lane_mask, width, at));
}
inline unsigned __ballot_sync(unsigned mask, int pred, std::source_location at = std::source_location::current()) {
  namespace h = ::triescope::cuda_host;
  return static_cast<unsigned>(h::warp_collective(h::WarpOp::ballot, mask, pred != 0, 0, 32, at));
}
inline int __any_sync(unsigned mask, int pred, std::source_location at = std::source_location::current()) {
  namespace h = ::triescope::cuda_host;
  return static_cast<int>(h::warp_collective(h::WarpOp::any, mask, pred != 0, 0, 32, at));
}
inline int __all_sync(unsigned mask, int pred, std::source_location at = std::source_location::current()) {
  namespace h = ::triescope::cuda_host;
  return static_cast<int>(h::warp_collective(h::WarpOp::all, mask, pred != 0, 0, 32, at));
}

// --- atomics (real atomics: the threads mode runs lanes on OS threads) ------------------------
template <typename T>
T triescope_cuda_host_atomic_cas(T* address, T compare, T val) {
  std::atomic_ref<T> a(*address);
  a.compare_exchange_strong(compare, val);
  return compare;  // the old value, whether or not it matched
}
inline int atomicCAS(int* address, int compare, int val) { return triescope_cuda_host_atomic_cas(address, compare, val); }
inline unsigned atomicCAS(unsigned* address, unsigned compare, unsigned val) { return triescope_cuda_host_atomic_cas(address, compare, val); }
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare, unsigned long long val) {
  return triescope_cuda_host_atomic_cas(address, compare, val);
}
// The read-modify-write atomics: each CUDA name is std::atomic_ref's
// operation of the same meaning, returning the old value.
#define TRIESCOPE_CUDA_HOST_ATOMIC(cuda_name, atomic_ref_op) \
  template <typename T>                                      \
  T cuda_name(T* address, T val) {                           \
    return std::atomic_ref<T>(*address).atomic_ref_op(val);  \
  }
TRIESCOPE_CUDA_HOST_ATOMIC(atomicAdd, fetch_add)
TRIESCOPE_CUDA_HOST_ATOMIC(atomicSub, fetch_sub)
TRIESCOPE_CUDA_HOST_ATOMIC(atomicExch, exchange)
TRIESCOPE_CUDA_HOST_ATOMIC(atomicOr, fetch_or)
TRIESCOPE_CUDA_HOST_ATOMIC(atomicAnd, fetch_and)
#undef TRIESCOPE_CUDA_HOST_ATOMIC
// atomicMax and atomicMin: stores val while it beats the value there
// (beats(val, old)); returns the old value.
template <typename T, typename Beats>
T triescope_cuda_host_atomic_keep_best(T* address, T val, Beats beats) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (beats(val, old) && !a.compare_exchange_weak(old, val)) {
  }
  return old;
}
template <typename T>
T atomicMax(T* address, T val) {
  return triescope_cuda_host_atomic_keep_best(address, val, [](T v, T old) { return old < v; });
}
template <typename T>
T atomicMin(T* address, T val) {
  return triescope_cuda_host_atomic_keep_best(address, val, [](T v, T old) { return v < old; });
}

// --- intrinsics ------------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
__extension__ typedef unsigned __int128 triescope_cuda_host_u128;
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<triescope_cuda_host_u128>(a) * b) >> 64);
}
template <typename T>
T __ldg(const T* p) {
  return *p;
}
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __int_as_float(int x) { return ::triescope::cuda_host::lane_value<float>(static_cast<uint32_t>(x)); }
inline int __float_as_int(float x) { return static_cast<int>(static_cast<uint32_t>(::triescope::cuda_host::lane_bits(x))); }
inline double __longlong_as_double(long long x) { return ::triescope::cuda_host::lane_value<double>(static_cast<uint64_t>(x)); }
inline long long __double_as_longlong(double x) { return static_cast<long long>(::triescope::cuda_host::lane_bits(x)); }

// CUDA's device min/max overloads.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
