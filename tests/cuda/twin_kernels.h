// The inputs, outputs and device launchers of the mask, KV, model and
// selection kernels' twin cases (twin_cases_kernels.cpp registers them; the
// error tests of test_kernels.cpp call the launchers with hand-made inputs).
// A launcher uploads the inputs, poisons every output (device_util.h), runs
// the kernel on this binary's device (the host runtime or a GPU) and
// downloads the outputs with the kernel's status.
#pragma once
#include <cstdint>
#include <vector>

#include "core/kv/kv_cache.h"
#include "core/mask/bit_mask.h"
#include "core/model/synthetic_model.h"
#include "core/model/tree_attention.h"
#include "core/model/tree_attention_cascade.h"
#include "core/tree/token_tree.h"
#include "cuda/cuda_common.cuh"

namespace triescope::testing {

// cuda/ancestor_mask.cu: ancestor_mask_build (twin: core/mask/ancestor_mask.h ancestor_mask_build).
struct MaskBuildIn {
  TokenTree tree;
  std::vector<int32_t> queries;
  int32_t num_slots = 0;
};
struct MaskBuildOut {
  std::vector<uint64_t> words;  // [queries x words_per_row]
  cuda::KernelStatus status;
};
MaskBuildOut mask_build_on_device(const MaskBuildIn& in);

// cuda/ancestor_mask.cu: position_ids (twin: core/mask/ancestor_mask.h position_ids).
struct PositionIdsIn {
  TokenTree tree;
  std::vector<int32_t> queries;
};
struct PositionIdsOut {
  std::vector<int32_t> positions;  // [queries]
  cuda::KernelStatus status;
};
PositionIdsOut position_ids_on_device(const PositionIdsIn& in);

// cuda/ancestor_mask.cu: ancestor_mask_extend (twin: its contract, row = table[src] | the in-batch chain's bits).
struct MaskExtendIn {
  std::vector<uint64_t> table;  // [table_rows x words], destination rows poisoned
  std::vector<int32_t> src, batch_parent, slot, dst;  // [num_new] each
  int32_t table_rows = 0, words = 0, num_slots = 0;
};
struct MaskExtendOut {
  std::vector<uint64_t> out;    // [num_new x words]
  std::vector<uint64_t> table;  // [table_rows x words] after the launch
  cuda::KernelStatus status;
};
MaskExtendOut mask_extend_on_device(const MaskExtendIn& in);

// cuda/kv_compact.cu: kv_compact (twin: core/kv/kv_compact.h kv_compact).
struct KvCompactIn {
  CompactionPlan plan;
  std::vector<unsigned char> cache;  // [old_num_slots x row_bytes + 16] random bytes
  int64_t row_bytes = 0;
  int32_t offset = 0;  // source and destination start this many bytes into their buffers (misaligned access paths)
};
struct KvCompactOut {
  std::vector<unsigned char> rows;    // [plan.src x row_bytes] from the destination's offset
  std::vector<unsigned char> before;  // [offset] the destination bytes before it: never written
  cuda::KernelStatus status;
};
KvCompactOut kv_compact_on_device(const KvCompactIn& in);

// cuda/synthetic_logits.cu: synthetic_logits (twin: core/model/synthetic_model.h synthetic_logits_fixed).
struct SyntheticLogitsIn {
  SyntheticConfig cfg;
  std::vector<int32_t> kv_tokens, kv_positions;  // [num_slots]; token -1: an empty slot
  BitMask mask;                                  // [queries x num_slots]
  std::vector<int32_t> query_positions;          // [queries]
};
struct SyntheticLogitsOut {
  std::vector<int32_t> fixed;  // [queries x vocab]
  std::vector<float> logits;   // [queries x vocab]
  cuda::KernelStatus status;
};
SyntheticLogitsOut synthetic_logits_on_device(const SyntheticLogitsIn& in);

// cuda/topk_candidates.cu: log_softmax_rows (twin: core/select/log_normaliser.h log_softmax_row).
struct LogSoftmaxIn {
  std::vector<float> logits;  // [logits_rows x vocab]
  int32_t logits_rows = 0, vocab = 0;
  std::vector<int32_t> rows;  // the logits row of each output row
};
struct LogSoftmaxOut {
  std::vector<double> out;  // [rows x vocab]
  cuda::KernelStatus status;
};
LogSoftmaxOut log_softmax_on_device(const LogSoftmaxIn& in);

// cuda/topk_candidates.cu: topk_candidates (twin: core/select/topk_candidates.h topk_candidates).
struct TopkIn {
  std::vector<double> logprobs;  // [rows x vocab]; -inf: masked
  std::vector<double> beam_scores;  // [rows]
  int32_t rows = 0, vocab = 0, k = 0;
};
struct TopkOut {
  int32_t count = 0;
  std::vector<double> score;  // [k] best first
  std::vector<int64_t> flat;  // [k] -1 past count
};
TopkOut topk_on_device(const TopkIn& in);

// cuda/tree_attention.cu: tree_attention, with or without a cascade (twin:
// core/model/tree_attention.h tree_attention_ref).
struct TreeAttentionIn {
  TreeAttentionArgs shape;            // sizes and scale; its pointers are unused (host_args() sets them)
  std::vector<float> q;               // [num_queries x heads x head_dim]
  std::vector<float> kv;              // [2 x capacity x kv_heads x head_dim]
  AncestorCsr csr;                    // the queries' ancestor lists
  TreeAttentionCascadeTable cascade;  // items == 0: no cascade
  int32_t plan_sms = 132;             // host twin: the SM count its plan fills (the device uses its own)
  int32_t plan_max_row = 0;           // host twin: the max_row its plan is told (0: shape.max_row)
  // `shape` pointing at the vectors above and at `out` (sized here), the
  // cascade (if any) a host view.
  TreeAttentionArgs host_args(std::vector<float>& out) const;
};
struct TreeAttentionOut {
  std::vector<double> out;  // [num_queries x heads x head_dim]
  cuda::KernelStatus status;
};
TreeAttentionOut tree_attention_on_device(const TreeAttentionIn& in);

}  // namespace triescope::testing
