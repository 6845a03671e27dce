// The host runtime's kernel executor: runs every block of a launch, each
// CUDA thread of a block as a fiber (or an OS thread), with CUDA's barrier,
// warp and shared-memory semantics, and names what goes wrong.
#pragma once
#include <memory>
#include <source_location>
#include <string>

#include "triescope_cuda_host/control.h"
#include "triescope_cuda_host/device.h"

namespace triescope::cuda_host {

struct LaunchSpec {
  KernelSite site{};
  dim3 grid, block;
  size_t shmem = 0;
  std::shared_ptr<const KernelBody> body;
  std::source_location at;
};

// sm_90 limits a launch is checked against.
struct DeviceLimits {
  static constexpr unsigned max_threads_per_block = 1024;
  static constexpr unsigned max_block_dim[3] = {1024, 1024, 64};
  static constexpr unsigned long long max_grid_dim[3] = {2147483647ULL, 65535, 65535};
  static constexpr size_t shared_per_block = 48 * 1024;          // static, and dynamic without opt-in
  static constexpr size_t shared_per_block_optin = 227 * 1024;   // dynamic with cudaFuncAttributeMaxDynamicSharedMemorySize
  static constexpr int multiprocessors = 132;                    // H100 SXM
  static constexpr int l2_bytes = 50 * 1024 * 1024;
};

// Runs the launch's blocks one after another. Returns "" or what faulted
// (kernel, block, threads, source lines); a fault stops the launch.
std::string execute_launch(const LaunchSpec& launch);

// "kernel_name (launched at file:line)"
std::string launch_name(const LaunchSpec& launch);

}  // namespace triescope::cuda_host
