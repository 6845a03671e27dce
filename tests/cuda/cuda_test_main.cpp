// The CUDA tests' own main: with no usable device it prints why and exits 77,
// which ctest (SKIP_RETURN_CODE 77) reports as skipped, never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>
#include <string>

#include "cuda/cuda_common.cuh"
#include "test_util.h"

int main(int argc, char** argv) {
  std::string why;
  if (triescope::cuda::device_count(&why) == 0) {
    std::cout << "triescope_tests_cuda: SKIPPED, no usable CUDA device (" << why << ")\n";
    return 77;
  }
  std::cout << "triescope_tests_cuda: base seed " << triescope::testing::base_seed()
            << " (rerun with TRIESCOPE_TEST_SEED=<seed>)\n";
  return Catch::Session().run(argc, argv);
}
