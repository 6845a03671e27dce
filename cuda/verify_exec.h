// Where a cuda verifier or the STATIC device index runs: on the device, or
// (CPU tests only) the same block algorithm on the host with a block of one
// thread. Plain C++; includes nothing, so every layer of cuda/ may use it
// (docs/architecture.md, "Layers").
#pragma once

namespace triescope::cuda {

enum class VerifyExec { device, host_twin };

}  // namespace triescope::cuda
