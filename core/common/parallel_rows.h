// Independent rows of host work (a beam step's log-softmax and top-k rows)
// spread over a pool of worker threads. Each call of fn(i) writes only row
// i's outputs, so every result is the same whatever the thread count: a
// decoder's trace never depends on it (tests/core/test_parallel_rows.cpp).
#pragma once
#include <cstdint>
#include <functional>

namespace triescope {

inline constexpr const char* kHostThreadsEnv = "TRIESCOPE_HOST_THREADS";

// Threads parallel_rows uses when not told: $TRIESCOPE_HOST_THREADS (an
// integer >= 1; a malformed value is an Error naming the variable), else the
// machine's hardware threads, at most 16.
int32_t parallel_rows_threads();

// Calls fn(i) for every i in [0, n), on up to `threads` threads including
// the caller, and returns when all calls are done. threads = 0: the default
// above, except that a job of fewer than 65,536 entries in all (n x
// row_entries, a row's entries of simple arithmetic) runs on the caller
// alone, since waking the workers would cost more than it saves.
// A call that throws does not stop the others: once every call is done, the
// exception of the lowest i that threw reaches the caller.
// A call made while another thread's call is running runs on the caller alone.
void parallel_rows(int32_t n, const std::function<void(int32_t)>& fn, int32_t threads = 0, int64_t row_entries = int64_t{1} << 16);

}  // namespace triescope
