// The memory a decode may ask for before it starts (docs/reliability.md,
// "Resource budget"): a sample whose masks or logits would exceed it is
// refused with a named error giving the size and how to change the budget,
// before anything is allocated. Sizes are computed in double (exact far past
// any real machine), so no product of in-range fields can wrap.
#pragma once
#include <cstdint>
#include <string>

namespace triescope {

inline constexpr const char* kMemoryBudgetEnv = "TRIESCOPE_MEMORY_BUDGET";

// Bytes: $TRIESCOPE_MEMORY_BUDGET (an integer, optionally with K, M, G or T:
// powers of 1024) when set, else half the machine's physical memory.
// A malformed value is an Error naming the variable.
int64_t resource_budget_bytes();

// Throws "<where>: <what> needs <bytes> (<GiB>), more than the memory budget
// of ... (TRIESCOPE_MEMORY_BUDGET=BYTES changes it)" when bytes > the budget.
void resource_budget_check(const std::string& where, const std::string& what, double bytes);

}  // namespace triescope
