// TrieScope's host CUDA runtime: cuda_runtime.h is the API (cuda_runtime_api.h)
// for host code; .cu files get the device side through the forced include
// triescope_cuda_host/device.h.
#pragma once
#include <cuda_runtime_api.h>
