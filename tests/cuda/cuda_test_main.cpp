// The CUDA tests' own main. Built for a GPU: with no usable device it prints
// why and exits 77, which ctest (SKIP_RETURN_CODE 77) reports as skipped,
// never as passed. Built on the host runtime: the device is always there
// (a missing one is a failure), and the runtime's mode is printed.
#include <iostream>
#include <string>

#include "cuda/cuda_common.cuh"
#include "test_util.h"
#include "tests/catch_session.h"
#ifdef TRIESCOPE_CUDA_HOST_RUNTIME
#include "triescope_cuda_host/control.h"
#endif

int main(int argc, char** argv) {
  std::string why;
  const int devices = triescope::cuda::device_count(&why);
#ifdef TRIESCOPE_CUDA_HOST_RUNTIME
  if (devices == 0) {
    std::cout << argv[0] << ": FAILED, the host runtime reports no device (" << why << ")\n";
    return 1;
  }
  std::cout << argv[0] << ": host runtime (" << triescope::cuda_host::describe_settings() << ")\n";
#else
  if (devices == 0) {
    std::cout << argv[0] << ": SKIPPED, no usable CUDA device (" << why << ")\n";
    return 77;
  }
#endif
  std::cout << argv[0] << ": base seed " << triescope::testing::base_seed() << " (rerun with TRIESCOPE_TEST_SEED=<seed>)\n";
  const int failed = catch_session_run(argc, argv);
#ifdef TRIESCOPE_CUDA_HOST_RUNTIME
  std::cout << argv[0] << ": " << triescope::cuda_host::kernels_executed() << " kernel launches executed on the host runtime\n";
#endif
  return failed;
}
