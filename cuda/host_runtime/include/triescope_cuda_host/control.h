// TrieScope's host CUDA runtime: how it executes, for programs and tests that
// want to choose (the environment chooses otherwise, see settings()).
//
//   TRIESCOPE_CUDA_EMU_THREADS   fibers (default) | threads (one OS thread per
//                                CUDA thread; the default under TSan/ASan)
//   TRIESCOPE_CUDA_EMU_STREAMS   immediate (default) | deferred (work runs
//                                only at synchronisation points)
//   TRIESCOPE_CUDA_EMU_BARRIER_TIMEOUT_S  threads mode: a barrier or warp
//                                collective not completed in this time is a
//                                named error (default 30)
//   TRIESCOPE_CUDA_EMU_BLOCK_TIMEOUT_S    a block still running after this
//                                time aborts the process with its name (300)
//   TRIESCOPE_CUDA_EMU_DEVICES   1 (default) or 0 (no device, as on a machine
//                                without a GPU)
//   TRIESCOPE_CUDA_EMU_STATS     a file: at exit, every launch's structure
//                                (launch_stats() below) as JSON
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace triescope::cuda_host {

enum class ThreadMode { fibers, threads };
enum class StreamMode { immediate, deferred };

struct Settings {
  ThreadMode threads = ThreadMode::fibers;
  StreamMode streams = StreamMode::immediate;
  double barrier_timeout_s = 30.0;
  double block_timeout_s = 300.0;
  int devices = 1;
  size_t fiber_stack_bytes = 256 * 1024;
};
// The settings in force (read from the environment on first use).
const Settings& settings();
// Overrides for tests; synchronises the device first.
void set_thread_mode(ThreadMode m);
void set_stream_mode(StreamMode m);
// "fibers, immediate streams" and the like, for logs and trace notes.
std::string describe_settings();

// Device allocations not yet freed (leak checks in tests).
size_t live_allocations();
// Kernel launches executed since start (tests check that work really ran).
size_t kernels_executed();

// The structure of one executed launch: what a GPU's time follows (blocks
// in flight, serial barrier rounds, warp collectives), counted exactly.
struct LaunchStat {
  std::string kernel;                  // the __global__ function's name
  std::string site;                    // file:line of the launch
  uint64_t blocks = 0;                 // grid.x * grid.y * grid.z
  uint32_t threads_per_block = 0;
  uint64_t dynamic_shared_bytes = 0;
  uint64_t barrier_rounds_max = 0;     // __syncthreads rounds of the block that ran most
  uint64_t barrier_rounds_total = 0;   // summed over blocks
  uint64_t warp_collectives_max = 0;   // completed warp collectives (one per warp and call), most in a block
  uint64_t warp_collectives_total = 0;
};
// Every launch executed since start or since reset_launch_stats(), in order.
std::vector<LaunchStat> launch_stats();
void reset_launch_stats();
// launch_stats() as JSON: {"launches": [...], "kernels": {name: totals}}.
std::string launch_stats_json();

}  // namespace triescope::cuda_host
