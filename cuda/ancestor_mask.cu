// CPU twin: core/mask/ancestor_mask.h (ancestor_mask_build, IncrementalAncestorMask::extend, position_ids)
#include "cuda/ancestor_mask.cuh"
#include "cuda/detail/device_status.h"

namespace triescope::cuda {

namespace {

constexpr unsigned kRowThreads = 128;

// Checks node `n`, the next on query q's ancestor chain after `hops` steps:
// in range, and the chain no longer than the tree (else a cycle). Reports a
// bad chain against the query and returns false.
__device__ inline bool chain_node_ok(int32_t q, int32_t n, int32_t& hops, int32_t num_nodes, KernelStatus* maybe_status) {
  if (n < 0 || n >= num_nodes) {
    detail::status_report(maybe_status, KernelError::node_out_of_range, q, n);
    return false;
  }
  if (++hops > num_nodes) {
    detail::status_report(maybe_status, KernelError::cycle, q, n);
    return false;
  }
  return true;
}

// Sets the bit of `node`'s slot `s` in `row` (`words` words); -1 is no slot,
// a slot outside [0, num_slots) or the row is reported against the node.
__device__ inline void slot_bit_set(uint64_t* row, int32_t words, int32_t num_slots, int32_t node, int32_t s, KernelStatus* maybe_status) {
  if (s == -1) return;
  if (s < 0 || s >= num_slots || (s >> 6) >= words)
    detail::status_report(maybe_status, KernelError::slot_out_of_range, node, s);
  else
    row[s >> 6] |= uint64_t{1} << (s & 63);
}

// One block per query: zero the row with coalesced stores, then one thread
// walks the chain (pointer chasing is sequential by nature).
__global__ void ancestor_mask_build_kernel(AncestorMaskBuildParams p) {
  for (int32_t q = blockIdx.x; q < p.num_queries; q += gridDim.x) {
    uint64_t* row = p.mask + static_cast<size_t>(q) * static_cast<size_t>(p.words_per_row);
    for (int32_t w = threadIdx.x; w < p.words_per_row; w += blockDim.x) row[w] = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
      int32_t n = p.queries[q];
      int32_t hops = 0;
      while (n != -1) {
        if (!chain_node_ok(q, n, hops, p.num_nodes, p.maybe_status)) break;
        slot_bit_set(row, p.words_per_row, p.num_slots, n, p.slot[n], p.maybe_status);
        n = p.parent[n];
      }
    }
    __syncthreads();
  }
}

__global__ void ancestor_mask_extend_kernel(AncestorMaskExtendParams p) {
  for (int32_t i = blockIdx.x; i < p.num_new; i += gridDim.x) {
    const int32_t dst = p.dst_row[i];
    const int32_t src = p.src_row[i];
    const bool dst_ok = dst >= 0 && dst < p.table_rows;
    const bool src_ok = src == -1 || (src >= 0 && src < p.table_rows);
    if (!dst_ok || !src_ok) {
      if (threadIdx.x == 0)
        detail::status_report(p.maybe_status, KernelError::row_out_of_range, i, dst_ok ? src : dst);
      continue;  // uniform across the block: no barrier is skipped by some threads only
    }
    uint64_t* drow = p.table + static_cast<size_t>(dst) * static_cast<size_t>(p.table_words);
    const uint64_t* srow = src == -1 ? nullptr : p.table + static_cast<size_t>(src) * static_cast<size_t>(p.table_words);
    // The parallel copy: 16-byte accesses when the rows allow it.
    if ((p.table_words & 1) == 0) {
      const int32_t pairs = p.table_words / 2;
      ulonglong2* d2 = reinterpret_cast<ulonglong2*>(drow);
      const ulonglong2* s2 = reinterpret_cast<const ulonglong2*>(srow);
      for (int32_t w = threadIdx.x; w < pairs; w += blockDim.x) d2[w] = srow ? s2[w] : make_ulonglong2(0, 0);
    } else {
      for (int32_t w = threadIdx.x; w < p.table_words; w += blockDim.x) drow[w] = srow ? srow[w] : 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      // own bit, then the in-batch ancestors' bits (a prefill chain)
      int32_t j = i, hops = 0;
      while (j != -1) {
        if (j < 0 || j >= p.num_new || ++hops > p.num_new || (j != i && j > i)) {
          detail::status_report(p.maybe_status, KernelError::node_out_of_range, i, j);
          break;
        }
        slot_bit_set(drow, p.table_words, p.num_slots, j, p.slot[j], p.maybe_status);
        j = p.batch_parent[j];
      }
    }
    __syncthreads();
    if (p.maybe_out) {
      uint64_t* orow = p.maybe_out + static_cast<size_t>(i) * static_cast<size_t>(p.out_words);
      for (int32_t w = threadIdx.x; w < p.out_words; w += blockDim.x) orow[w] = w < p.table_words ? drow[w] : 0;
    }
    __syncthreads();
  }
}

__global__ void position_ids_kernel(PositionIdsParams p) {
  for (int32_t q = blockIdx.x * blockDim.x + threadIdx.x; q < p.num_queries; q += gridDim.x * blockDim.x) {
    int32_t n = p.queries[q];
    if (n < 0 || n >= p.num_nodes) {
      detail::status_report(p.maybe_status, KernelError::node_out_of_range, q, n);
      p.positions[q] = -1;
      continue;
    }
    int32_t depth = 0;
    for (int32_t up = p.parent[n]; up != -1; n = up, up = p.parent[n])
      if (!chain_node_ok(q, up, depth, p.num_nodes, p.maybe_status)) break;
    // n is the root now (or where a bad chain stopped)
    p.positions[q] = depth + (p.maybe_root_depth ? p.maybe_root_depth[n] : 0);
  }
}

unsigned grid_for_rows(int32_t rows) { return static_cast<unsigned>(rows < 1 ? 1 : (rows > 65535 * 16 ? 65535 * 16 : rows)); }

// Throws Error naming `launcher` and `field` when `words` words of 64 bits
// cannot hold a row of `slots` bits.
void row_words_check(const char* launcher, const char* field, int32_t words, int32_t slots) {
  TS_CHECK(int64_t{words} * 64 >= slots, launcher << " (cuda): " << field << " " << words << " too small for " << slots << " slots");
}

}  // namespace

void ancestor_mask_build(const AncestorMaskBuildParams& p, cudaStream_t stream) {
  TS_CHECK(p.num_queries >= 0 && p.num_slots >= 0 && p.num_nodes >= 0, "ancestor_mask_build (cuda): negative size");
  row_words_check("ancestor_mask_build", "words_per_row", p.words_per_row, p.num_slots);
  if (p.num_queries == 0) return;
  ancestor_mask_build_kernel<<<grid_for_rows(p.num_queries), kRowThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("ancestor_mask_build_kernel");
}

void ancestor_mask_extend(const AncestorMaskExtendParams& p, cudaStream_t stream) {
  TS_CHECK(p.num_new >= 0 && p.num_slots >= 0, "ancestor_mask_extend (cuda): negative size");
  row_words_check("ancestor_mask_extend", "table_words", p.table_words, p.num_slots);
  if (p.maybe_out) row_words_check("ancestor_mask_extend", "out_words", p.out_words, p.num_slots);
  if (p.num_new == 0) return;
  ancestor_mask_extend_kernel<<<grid_for_rows(p.num_new), kRowThreads, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("ancestor_mask_extend_kernel");
}

void position_ids(const PositionIdsParams& p, cudaStream_t stream) {
  TS_CHECK(p.num_queries >= 0 && p.num_nodes >= 0, "position_ids (cuda): negative size");
  if (p.num_queries == 0) return;
  position_ids_kernel<<<detail::blocks_for(p.num_queries, 128), 128, 0, stream>>>(p);
  TS_CUDA_CHECK_LAUNCH("position_ids_kernel");
}

}  // namespace triescope::cuda
