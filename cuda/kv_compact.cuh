// KV compaction on the device: applies a CompactionPlan as one gather,
// dst[i] = src[plan_src[i]] row by row (CPU twin: kv_compact in
// core/kv/kv_compact.h). src and dst must not overlap.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

struct KvCompactParams {
  const void* src = nullptr;          // [old_num_slots x row_bytes] the cache before
  void* dst = nullptr;                // [new_num_slots x row_bytes] the cache after
  const int32_t* plan_src = nullptr;  // [new_num_slots] old slot feeding each new slot (may repeat)
  int32_t new_num_slots = 0;
  int32_t old_num_slots = 0;
  int64_t row_bytes = 0;              // bytes of one slot (all layers, K and V)
  KernelStatus* maybe_status = nullptr;
};
void kv_compact(const KvCompactParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
