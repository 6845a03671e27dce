// CudaSyntheticModel: the synthetic model with its KV cache of
// (token, position) pairs in device memory. forward() uploads the step's
// tokens, positions, slots and mask rows, writes the K/V on the device, runs
// synthetic_logits there and copies back only the logits (what the decoder
// and its trace need), or nothing when the caller's device selector reads
// them in place (StepInput::logits_may_stay_on_device: then the forward waits
// for nothing, and its kernels' status rides back with the selector's
// answer, DeviceLogits::status). Bit-identical logits to SyntheticModel by
// construction; tests/cuda checks it on random inputs.
// Plain C++ header: no CUDA types, so app/ and tests include it with g++.
#pragma once
#include <memory>

#include "core/model/synthetic_model.h"
#include "cuda/synthetic_logits.cuh"

namespace triescope::cuda {

// The kernel's plain copy of a SyntheticConfig (no KV shape, no host-only types).
SyntheticLogitsConfig synthetic_logits_config(const SyntheticConfig& c);

class CudaSyntheticModel final : public Model {
 public:
  // Throws Error when no CUDA device is usable, naming the runtime's answer.
  explicit CudaSyntheticModel(SyntheticConfig cfg);
  ~CudaSyntheticModel() override;
  int32_t vocab_size() const override { return cfg_.vocab_size; }
  void forward(const StepInput& in, Logits& out) override;
  void compact(const CompactionPlan& plan) override;
  void reset() override;
  // Identical to SyntheticModel's, so CPU and CUDA trace headers diff equal.
  nlohmann::json describe() const override { return description_; }
  KvShape kv_shape() const override { return cfg_.nominal_shape; }
  const SyntheticConfig& config() const { return cfg_; }
  // Slots the device cache can hold before it grows.
  int32_t capacity_slots() const;

 private:
  struct Device;
  SyntheticConfig cfg_;
  nlohmann::json description_;
  std::unique_ptr<Device> dev_;
};

}  // namespace triescope::cuda
