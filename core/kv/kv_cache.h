// The shared KV cache's bookkeeping: slot allocation, garbage collection
// (trie paper 3.5) and memory accounting. The cache contents live in the
// model (or on the device); this module only decides which slot is which.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tree/token_tree.h"

namespace triescope {

// Shape of one slot in a real cache, for byte accounting:
// bytes per slot = layers x 2 (K and V) x kv_heads x head_dim x dtype_bytes.
struct KvShape {
  int32_t layers = 1;
  int32_t kv_heads = 1;
  int32_t head_dim = 64;
  int32_t dtype_bytes = 2;
  int64_t bytes_per_slot() const {
    return int64_t{layers} * 2 * int64_t{kv_heads} * int64_t{head_dim} * int64_t{dtype_bytes};
  }
};

// A compaction as one gather: new_cache[i] = old_cache[src[i]] for
// i in [0, src.size()). Entries of src may repeat (batch beam reorder).
struct CompactionPlan {
  int32_t old_num_slots = 0;
  std::vector<int32_t> src;  // [new_num_slots] old slot feeding each new slot
  int32_t new_num_slots() const { return static_cast<int32_t>(src.size()); }
};

// Applies a plan to a host buffer of `row_elems` elements per slot.
template <typename T>
void compaction_apply(const CompactionPlan& plan, std::vector<T>& cache, size_t row_elems) {
  std::vector<T> out(plan.src.size() * row_elems);
  for (size_t i = 0; i < plan.src.size(); ++i)
    for (size_t e = 0; e < row_elems; ++e) out[i * row_elems + e] = cache[static_cast<size_t>(plan.src[i]) * row_elems + e];
  cache.swap(out);
}

// Append-only slot allocator over one flat cache. Freed slots come back only
// through a compaction (the paper defers all reorganisation to GC).
class KvSlots {
 public:
  int32_t allocate() {
    const int32_t s = num_slots_++;
    if (num_slots_ > peak_) peak_ = num_slots_;
    return s;
  }
  int32_t num_slots() const { return num_slots_; }
  int32_t peak() const { return peak_; }
  void reset() { num_slots_ = 0; peak_ = 0; }
  void apply(const CompactionPlan& plan) { num_slots_ = plan.new_num_slots(); }

 private:
  int32_t num_slots_ = 0;
  int32_t peak_ = 0;
};

// Garbage collection: keeps exactly the slots of the ancestors-or-self of
// `live` nodes, in their old order (so the serialisation order survives), and
// rewrites every node's slot (collected nodes get kNoSlot). Returns the plan.
CompactionPlan kv_collect_garbage(TokenTree& tree, const std::vector<int32_t>& live, int32_t num_slots);

// Slots the batch baseline would hold for the same step: every live beam
// keeps a full copy of prompt + its generated tokens.
inline int64_t batch_baseline_slots(int64_t live_beams, int64_t prompt_len, int64_t generated) {
  return live_beams * (prompt_len + generated);
}

// Mem/Tok as the trie paper defines it (its Eq. 1): (peak - model) / (input + output).
// Here only the KV cache is counted, so "model" is zero.
inline double mem_per_token(int64_t peak_bytes, int64_t input_len, int64_t output_len) {
  return input_len + output_len > 0 ? static_cast<double>(peak_bytes) / static_cast<double>(input_len + output_len) : 0.0;
}

}  // namespace triescope
