// Handles to what a device backend left in device memory for the next stage
// of a decode step, so it need not cross to the host (issue 33: one host
// wait a step). Opaque to core (no device types): only a consumer of the same
// backend dereferences them. docs/cuda.md "Seams" says who hands what to whom.
#pragma once
#include <cstdint>

namespace triescope {

// A step's ancestor-mask rows built on a device (MaskRowBuilder::extend_on_device).
struct DeviceMask {
  const uint64_t* rows = nullptr;  // [num_queries x words_per_row] device memory, valid until the builder's next extend or reset
  int32_t words_per_row = 0;
  void* ready = nullptr;   // a cudaEvent_t recorded once the rows are written: a consumer on another stream waits on it
  void* status = nullptr;  // the building kernels' cuda::KernelStatus in device memory, not read yet
};

// Where a model that computed its logits on a device left them (Logits::device).
struct DeviceLogits {
  const float* rows = nullptr;  // [rows x vocab] device memory, valid until the model's next forward, compact or reset
  void* stream = nullptr;       // the cudaStream_t they are ready in order on
  // The producing kernels' status (a cuda::KernelStatus in device memory),
  // not yet read: the selector reads it back with its answer and throws on
  // an error, so the forward itself waits for nothing. Null: checked already.
  void* status = nullptr;
  // The same for the kernels that built the forward's inputs on the device
  // (DeviceMask::status, handed on by the model); null: none, or checked.
  void* input_status = nullptr;
  // The rows are host memory the backend's kernels read as device memory:
  // LibTorch's CPU tensors on the host runtime (cuda-emu), never on a GPU.
  bool rows_in_host_memory = false;
};

}  // namespace triescope
