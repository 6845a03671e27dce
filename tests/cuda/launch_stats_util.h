// The structure tests' view of the host runtime's launch statistics
// (cuda/host_runtime launch_stats()). Host runtime only.
#pragma once
#include <string>
#include <vector>

#include "triescope_cuda_host/control.h"

namespace triescope::testing {

// The launches since the last reset_launch_stats() of the kernels whose
// names start with `kernel_prefix` (a template kernel's name carries its arguments).
inline std::vector<cuda_host::LaunchStat> launches_of(const std::string& kernel_prefix) {
  std::vector<cuda_host::LaunchStat> out;
  for (const cuda_host::LaunchStat& s : cuda_host::launch_stats())
    if (s.kernel.rfind(kernel_prefix, 0) == 0) out.push_back(s);
  return out;
}

}  // namespace triescope::testing
