#include "core/kv/kv_compact.h"

#include <cstring>

#include "core/common/error.h"

namespace triescope {

void kv_compact(const CompactionPlan& plan, const void* src, void* dst, size_t row_bytes) {
  TS_CHECK(row_bytes > 0, "kv_compact: row_bytes must be > 0");
  for (size_t i = 0; i < plan.src.size(); ++i)
    TS_CHECK(plan.src[i] >= 0 && plan.src[i] < plan.old_num_slots,
             "kv_compact: plan.src[" << i << "] = " << plan.src[i] << " outside [0, " << plan.old_num_slots << ")");
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < plan.src.size(); ++i)
    std::memcpy(d + i * row_bytes, s + static_cast<size_t>(plan.src[i]) * row_bytes, row_bytes);
}

}  // namespace triescope
