// The recorder behind launch_stats() (control.h): the executor reports each
// launch it ran; TRIESCOPE_CUDA_EMU_STATS names a file written at exit.
#pragma once
#include "triescope_cuda_host/control.h"

namespace triescope::cuda_host {

void record_launch(LaunchStat stat);

}  // namespace triescope::cuda_host
