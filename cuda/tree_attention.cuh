// Tree attention on the device: one transformer layer's attention for the
// queries of a tree step over the slot KV cache, each query reading exactly
// the slots of its ancestor list (CSR), so masked-out K/V is never loaded.
// Flash-decoding style: online softmax in fp32, long lists split across
// blocks with a second combine pass. CPU twin: tree_attention_ref in
// core/model/tree_attention.h (double). Arguments: TreeAttentionArgs (same
// header), device pointers; a slot id outside [0, capacity) is reported
// through KernelStatus as slot_out_of_range (index = query, value = slot).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/model/tree_attention.h"
#include "cuda/cuda_common.cuh"

namespace triescope::cuda {

// How a launch cuts the work: a block per (query, KV head, head group of at
// most `heads_per_block` query heads, split); split s of query r covers list
// entries [s * chunk, (s + 1) * chunk). Pure host arithmetic (tested on the CPU).
struct TreeAttentionPlan {
  int32_t heads_per_block = 0;  // query heads of one GQA group a block handles (<= 8)
  int32_t head_groups = 0;      // ceil(group / heads_per_block) blocks per KV head
  int32_t splits = 1;           // blocks per (query, KV head, head group) along the list
  int32_t chunk = 0;            // list entries per split
  int32_t vec = 0;              // ceil(head_dim / 32) floats per lane (1, 2, 4 or 8)
  int32_t items = 0;            // cascade items (a.cascade.items): a second kernel, a block per item x KV head
  int32_t partials = 0;         // 1: blocks write partial states (splits > 1 or a cascade), merged by a third kernel
};
// `sm_count` sizes the split: enough blocks for ~4 waves of `sm_count`, never
// chunks under 64 entries. head_dim must be <= 256. Under a cascade
// (a.cascade.items > 0) the per-query blocks read the private lists, the
// items' blocks the shared segments, and a merge combines them
// (FlashInfer's cascade attention and merge_state).
TreeAttentionPlan tree_attention_plan(const TreeAttentionArgs& a, int32_t sm_count);
// Scratch bytes for the split partials (0 when splits == 1).
size_t tree_attention_workspace_bytes(const TreeAttentionPlan& p, const TreeAttentionArgs& a);

// K/V bytes the launches of plan `p` read, summed over every block's chunk:
// a per-query block reads its list once per head group, an item block its
// chunk once for all heads of its KV head. `listed` = entries of a's lists
// (indptr[num_queries]); under a cascade the private lists' length is used.
double tree_attention_kv_bytes(const TreeAttentionArgs& a, const TreeAttentionPlan& p, int64_t listed);

// Launch on a.stream; asynchronous. a.workspace must hold
// tree_attention_workspace_bytes(plan for this device) bytes (the
// one-argument form below plans for the current device).
void tree_attention(const TreeAttentionArgs& a);
size_t tree_attention_workspace_bytes(const TreeAttentionArgs& a);

// Where the kernel's buffers live: device memory (a GPU), or host memory
// (LibTorch CPU tensors; TreeAttentionKernel::host_memory), where each launch
// returns when the kernel has finished. The backend picks one
// (cuda::backend_tree_attention_register, cuda/cuda_backend.h).
enum class TreeAttentionMemory { device, host };

// Fills core's registry (tree_attention_kernel_register) with this kernel, so
// a TorchTransformer uses it (attention "tree_kernel", or "auto" on device
// "cuda"; with host memory also on device "cpu"). Idempotent.
void tree_attention_register(TreeAttentionMemory memory);

}  // namespace triescope::cuda
