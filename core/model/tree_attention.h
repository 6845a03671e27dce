// Tree attention for one transformer layer over a slot KV cache: each query
// attends to exactly the slots of its ancestor list (a CSR list built from
// its bit-packed mask row), so masked-out K/V is never read. This header is
// the CUDA-free half: the argument block both implementations take, the CPU
// twin (double accumulation) of cuda/tree_attention.cuh's kernel, the CSR
// builder, and a registry through which cuda/ hands its kernel to
// TorchTransformer without core/ depending on cuda/ (docs/cuda.md, "Tree
// attention").
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/mask/bit_mask.h"

namespace triescope {

// A cascade decomposition of the lists (tree_attention_cascade.h builds it
// on the host): FlashInfer's cascade attention (a shared prefix attended once
// for all queries below it, each query's own suffix alone, the partial softmax
// states merged by the log-sum-exp rule) generalised to every segment of a
// trie. A segment is the set of slots read by exactly the same >= 2 queries;
// an item is a chunk of a segment's slots x a tile of its queries, attended
// once per KV head; each query's slots outside every segment stay its
// private list. Pointers into one int32 table, host or device like the rest.
struct TreeAttentionCascade {
  int32_t items = 0;            // 0: no cascade, the kernel reads indptr / slot_ids
  int32_t members = 0;          // member entries over all items (one partial state per entry and head)
  int32_t tile_rows = 0;        // most query heads (members x group) one item holds
  int32_t private_max_row = 0;  // longest private list
  int64_t private_entries = 0;  // host-known sizes: the private lists' total length,
  int64_t item_slot_reads = 0;  // and the items' chunk lengths summed (a tile re-reads its chunk)
  const int32_t* item = nullptr;            // [items x 4] slot_lo, slot_hi (into shared_slots), mem_lo, mem_hi (into member)
  const int32_t* shared_slots = nullptr;    // segments' slots, each segment once, ascending within it
  const int32_t* member = nullptr;          // [members] the query of each member entry
  const int32_t* query_part_ptr = nullptr;  // [num_queries + 1] query r's member entries: query_parts[ptr[r], ptr[r + 1])
  const int32_t* query_parts = nullptr;     // [members]
  const int32_t* private_ptr = nullptr;     // [num_queries + 1] query r reads private_slots[ptr[r], ptr[r + 1]) alone
  const int32_t* private_slots = nullptr;
};

// Raw pointers, host or device depending on who runs it; fp32 throughout.
// The cache layout is TorchTransformer's per-layer tensor
// [2 (K, V), capacity, kv_heads, head_dim], contiguous.
struct TreeAttentionArgs {
  const float* q = nullptr;           // [num_queries x heads x head_dim] (after RoPE)
  const float* kv = nullptr;          // [2 x capacity x kv_heads x head_dim]: K block, then V block
  const int32_t* indptr = nullptr;    // [num_queries + 1] query r reads slot_ids[indptr[r], indptr[r + 1])
  const int32_t* slot_ids = nullptr;  // [indptr[num_queries]] slots each query may read (its ancestors and itself)
  float* out = nullptr;               // [num_queries x heads x head_dim]
  int32_t num_queries = 0;
  int32_t heads = 0;     // query heads; GQA: query head j reads KV head j / (heads / kv_heads)
  int32_t kv_heads = 0;
  int32_t head_dim = 0;
  int32_t capacity = 0;  // slots the cache holds: every slot id must be in [0, capacity)
  int32_t max_row = 0;   // longest ancestor list (host-known; sizes the kernel's split)
  float scale = 0.0f;    // softmax scale, 1 / sqrt(head_dim)
  // Optional: the same lists cut into shared segments and private lists
  // (items == 0: none); the output is the same, up to rounding.
  TreeAttentionCascade cascade;
  // Device kernel only: scratch for split rows (size from the registered
  // kernel's workspace_bytes), the KernelStatus word (3 x int32: code, index,
  // value; may be null) and the cudaStream_t (null: the legacy default stream,
  // which LibTorch's default current stream is).
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int32_t* status = nullptr;
  void* stream = nullptr;
};

// Checks sizes and the CSR shape (indptr starts at 0, never decreases,
// max_row is at least the longest row); names the field. Host pointers only.
void tree_attention_check(const TreeAttentionArgs& a, const char* what);

// The CPU twin, written from the definition: per query and head, scores
// s_j = scale * <q, K[slot_j]> over its list, p = softmax(s) (two passes,
// max first), out = sum_j p_j V[slot_j], all in double. An empty list gives
// zeros (the kernel's convention; TorchTransformer never sends one). A slot
// id outside [0, capacity) throws Error naming the query and list index.
// `out` is [num_queries x heads x head_dim]; a.out is ignored.
void tree_attention_ref(const TreeAttentionArgs& a, std::vector<double>& out);
// Same, rounded to float into a.out (what TorchTransformer runs on the CPU
// for attention "tree_kernel").
void tree_attention_host(const TreeAttentionArgs& a);

// Ancestor lists from bit-packed mask rows, in ascending slot order.
struct AncestorCsr {
  std::vector<int32_t> indptr;    // [rows + 1]
  std::vector<int32_t> slot_ids;  // [indptr.back()]
  int32_t max_row = 0;
};
AncestorCsr ancestor_csr(const BitMask& mask);

// The device kernel, registered by cuda::tree_attention_register()
// (cuda/tree_attention.cuh) in programs built with CUDA.
struct TreeAttentionKernel {
  const char* name = nullptr;
  // The kernel runs on the host runtime (cuda/host_runtime/), where device
  // memory is host memory: TorchTransformer hands it CPU tensors, and
  // attention "auto" or "tree_kernel" on device "cpu" use it instead of the
  // CPU twin. launch() returns when the kernel has finished.
  bool host_memory = false;
  size_t (*workspace_bytes)(const TreeAttentionArgs&) = nullptr;  // scratch the launch needs
  void (*launch)(const TreeAttentionArgs&) = nullptr;             // asynchronous on a.stream
  const char* (*error_name)(int32_t code) = nullptr;              // KernelStatus code -> text
};
void tree_attention_kernel_register(const TreeAttentionKernel& k);
// The kernel and its CPU twin read fp32 queries and cache: a model of another
// dtype ("bfloat16") cannot run attention "tree_kernel", and its "auto" never
// picks it.
inline bool tree_attention_reads_dtype(std::string_view dtype) { return dtype == "float32"; }
// The registered kernel, or null when none is (a CPU-only build).
const TreeAttentionKernel* tree_attention_kernel();

}  // namespace triescope
