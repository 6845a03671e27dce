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
#pragma once
#include <cstddef>
#include <string>

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

}  // namespace triescope::cuda_host
