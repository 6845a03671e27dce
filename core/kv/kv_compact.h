// A compaction plan applied to a raw host cache: the CPU twin of
// cuda/kv_compact.cuh's kv_compact (compaction_apply in kv_cache.h is the
// typed form the models use; this one takes bytes, like the device cache).
#pragma once
#include <cstddef>

#include "core/kv/kv_cache.h"

namespace triescope {

// dst[i] = src[plan.src[i]] for rows of `row_bytes`; src holds
// plan.old_num_slots rows, dst plan.new_num_slots(). Throws Error naming the
// first source slot outside [0, old_num_slots). src and dst must not overlap.
void kv_compact(const CompactionPlan& plan, const void* src, void* dst, size_t row_bytes);

}  // namespace triescope
