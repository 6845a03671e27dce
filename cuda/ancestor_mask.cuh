// Ancestor mask and position ids on the device (CPU twins in
// core/mask/ancestor_mask.h: ancestor_mask_build, IncrementalAncestorMask::
// extend, position_ids). Masks are bit-packed, row-major, LSB first, exactly
// as BitMask. Launchers are asynchronous on `stream`; bad input is reported
// through `maybe_status` (read it with status_check), never by a crash.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

// Full build: row i holds the slot bit of every ancestor-or-self of
// queries[i] (a walk up the parent chain per query).
struct AncestorMaskBuildParams {
  const int32_t* parent = nullptr;   // [num_nodes] parent node id, -1 for a root
  const int32_t* slot = nullptr;     // [num_nodes] KV slot of each node, -1 when it holds none
  int32_t num_nodes = 0;
  const int32_t* queries = nullptr;  // [num_queries] node ids, one mask row each
  int32_t num_queries = 0;
  int32_t num_slots = 0;             // mask columns
  int32_t words_per_row = 0;         // >= ceil(num_slots / 64); words are fully rewritten
  uint64_t* mask = nullptr;          // [num_queries x words_per_row] out
  KernelStatus* maybe_status = nullptr;
};
void ancestor_mask_build(const AncestorMaskBuildParams& p, cudaStream_t stream);

// Incremental build (trie paper 3.3): a new node's row is its parent's row
// plus its own slot bit, one parallel copy per new row. Rows live in a
// device table; the host decides which table row each node owns. A new node
// whose parent is new in the same batch (a prefill chain) starts from the
// row of its nearest ancestor outside the batch and adds the slot bits of
// the in-batch chain up to itself.
struct AncestorMaskExtendParams {
  const int32_t* src_row = nullptr;       // [num_new] table row of the nearest ancestor outside this batch, -1: none
  const int32_t* batch_parent = nullptr;  // [num_new] index in this batch of the parent, -1 when outside; < own index
  const int32_t* slot = nullptr;          // [num_new] own KV slot, -1 when none
  const int32_t* dst_row = nullptr;       // [num_new] table row to write; never a src_row of the same batch
  int32_t num_new = 0;
  uint64_t* table = nullptr;              // [table_rows x table_words] held rows
  int32_t table_rows = 0;
  int32_t table_words = 0;
  int32_t num_slots = 0;                  // columns in use (<= 64 x table_words)
  uint64_t* maybe_out = nullptr;          // [num_new x out_words] the step's mask rows (StepInput layout)
  int32_t out_words = 0;                  // ceil(num_slots / 64)
  KernelStatus* maybe_status = nullptr;
};
void ancestor_mask_extend(const AncestorMaskExtendParams& p, cudaStream_t stream);

// Position ids: the depth of each query, i.e. its root's starting depth plus
// the length of its parent chain (TokenTree::add_root's root_depth).
struct PositionIdsParams {
  const int32_t* parent = nullptr;            // [num_nodes] parent node id, -1 for a root
  const int32_t* maybe_root_depth = nullptr;  // [num_nodes] depth a root starts at (read for roots only); null: 0
  int32_t num_nodes = 0;
  const int32_t* queries = nullptr;  // [num_queries]
  int32_t num_queries = 0;
  int32_t* positions = nullptr;      // [num_queries] out
  KernelStatus* maybe_status = nullptr;
};
void position_ids(const PositionIdsParams& p, cudaStream_t stream);

}  // namespace triescope::cuda
