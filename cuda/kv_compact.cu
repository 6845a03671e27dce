// CPU twin: core/kv/kv_compact.h (kv_compact)
#include "cuda/kv_compact.cuh"
#include "cuda/detail/device_status.h"

namespace triescope::cuda {

namespace {

// Rows of at least a block's worth of vectors: a block per new slot (grid
// stride), threads across the row, so each row copy is fully coalesced.
template <typename V>
__global__ void kv_compact_rows_kernel(KvCompactParams p, int64_t row_vecs) {
  const V* src = static_cast<const V*>(p.src);
  V* dst = static_cast<V*>(p.dst);
  for (int32_t i = blockIdx.x; i < p.new_num_slots; i += gridDim.x) {
    const int32_t s = p.plan_src[i];
    if (s < 0 || s >= p.old_num_slots) {
      if (threadIdx.x == 0) detail::status_report(p.maybe_status, KernelError::src_out_of_range, i, s);
      continue;
    }
    const V* from = src + static_cast<int64_t>(s) * row_vecs;
    V* to = dst + static_cast<int64_t>(i) * row_vecs;
    for (int64_t e = threadIdx.x; e < row_vecs; e += blockDim.x) to[e] = from[e];
  }
}

// Short rows: one thread per vector over the flattened output.
template <typename V>
__global__ void kv_compact_flat_kernel(KvCompactParams p, int64_t row_vecs) {
  const V* src = static_cast<const V*>(p.src);
  V* dst = static_cast<V*>(p.dst);
  const int64_t total = static_cast<int64_t>(p.new_num_slots) * row_vecs;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / row_vecs, e = k - i * row_vecs;
    const int32_t s = p.plan_src[i];
    if (s < 0 || s >= p.old_num_slots) {
      if (e == 0) detail::status_report(p.maybe_status, KernelError::src_out_of_range, static_cast<int32_t>(i), s);
      continue;
    }
    dst[k] = src[static_cast<int64_t>(s) * row_vecs + e];
  }
}

template <typename V>
void launch(const KvCompactParams& p, cudaStream_t stream) {
  constexpr unsigned threads = 256;
  const int64_t row_vecs = p.row_bytes / static_cast<int64_t>(sizeof(V));
  if (row_vecs >= threads) {
    const unsigned grid = static_cast<unsigned>(p.new_num_slots > 65535 * 16 ? 65535 * 16 : p.new_num_slots);
    kv_compact_rows_kernel<V><<<grid, threads, 0, stream>>>(p, row_vecs);
    TS_CUDA_CHECK_LAUNCH("kv_compact_rows_kernel");
  } else {
    kv_compact_flat_kernel<V><<<detail::blocks_for(static_cast<long long>(p.new_num_slots) * row_vecs, threads), threads, 0,
                                stream>>>(p, row_vecs);
    TS_CUDA_CHECK_LAUNCH("kv_compact_flat_kernel");
  }
}

bool aligned(const void* ptr, int64_t row_bytes, int64_t n) {
  return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(n) == 0 && row_bytes % n == 0;
}

}  // namespace

void kv_compact(const KvCompactParams& p, cudaStream_t stream) {
  TS_CHECK(p.new_num_slots >= 0 && p.old_num_slots >= 0, "kv_compact (cuda): negative slot count");
  TS_CHECK(p.row_bytes > 0, "kv_compact (cuda): row_bytes must be > 0, got " << p.row_bytes);
  if (p.new_num_slots == 0) return;
  TS_CHECK(p.src != nullptr && p.dst != nullptr && p.plan_src != nullptr, "kv_compact (cuda): null buffer");
  const char* s = static_cast<const char*>(p.src);
  const char* d = static_cast<const char*>(p.dst);
  TS_CHECK(d + p.new_num_slots * p.row_bytes <= s || s + p.old_num_slots * p.row_bytes <= d,
           "kv_compact (cuda): src and dst overlap; a gather needs a second buffer");
  // The widest access both pointers and the row size allow: 16 bytes per thread on any real cache.
  if (aligned(p.src, p.row_bytes, 16) && aligned(p.dst, p.row_bytes, 16)) launch<uint4>(p, stream);
  else if (aligned(p.src, p.row_bytes, 8) && aligned(p.dst, p.row_bytes, 8)) launch<uint2>(p, stream);
  else if (aligned(p.src, p.row_bytes, 4) && aligned(p.dst, p.row_bytes, 4)) launch<uint32_t>(p, stream);
  else launch<unsigned char>(p, stream);
}

}  // namespace triescope::cuda
