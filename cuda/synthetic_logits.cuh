// The synthetic model on the device (CPU twin: synthetic_logits_fixed and
// SyntheticModel::forward in core/model/synthetic_model.h). Integer
// arithmetic end to end, so the logits are bit-identical to the CPU's; each
// query reads the visible (token, position) pairs through its bit-packed mask
// row, exactly as attention reads K/V.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/model/synthetic_logits_config.h"
#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

// Writes each query's (token, position) into its slot: the K/V write that
// precedes attention in a forward pass.
struct SyntheticKvWriteParams {
  const int32_t* tokens = nullptr;     // [num_queries]
  const int32_t* positions = nullptr;  // [num_queries]
  const int32_t* slots = nullptr;      // [num_queries] slot written by each query
  int32_t num_queries = 0;
  int32_t* kv_tokens = nullptr;        // [num_slots] token per slot, -1: empty
  int32_t* kv_positions = nullptr;     // [num_slots]
  int32_t num_slots = 0;
  // Device [2]: the live query and slot counts, read by the kernel (a
  // captured launch replays with new sizes); num_queries and num_slots above
  // are then the capacity the launch is shaped for (a padded bucket, the
  // cache's capacity), and queries past the live count do nothing. Null: the
  // fields above are the live counts.
  const int32_t* maybe_sizes = nullptr;
  KernelStatus* maybe_status = nullptr;
};
void synthetic_kv_write(const SyntheticKvWriteParams& p, cudaStream_t stream);

struct SyntheticLogitsParams {
  SyntheticLogitsConfig cfg;  // a SyntheticConfig without its KV shape
  const int32_t* kv_tokens = nullptr;        // [num_slots] token per slot, -1: empty
  const int32_t* kv_positions = nullptr;     // [num_slots] position id per slot
  int32_t num_slots = 0;
  const uint64_t* mask = nullptr;            // [num_queries x words_per_row] slots each query reads
  int32_t words_per_row = 0;                 // >= ceil(num_slots / 64)
  const int32_t* query_positions = nullptr;  // [num_queries]
  int32_t num_queries = 0;
  int32_t* maybe_out_fixed = nullptr;        // [num_queries x vocab] raw fixed-point logits
  float* maybe_out_logits = nullptr;         // [num_queries x vocab] fixed x (1 / 4096)
  const int32_t* maybe_sizes = nullptr;      // as SyntheticKvWriteParams::maybe_sizes (rows past the live count are not written)
  KernelStatus* maybe_status = nullptr;
};
// One block per (query, vocabulary chunk) so a few queries still fill the
// chip, then, with an EOS token, one block per query for the EOS logit (it
// needs the row's maximum): 1 or 2 launches.
void synthetic_logits(const SyntheticLogitsParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
