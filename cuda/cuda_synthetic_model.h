// CudaSyntheticModel: the synthetic model with its KV cache of
// (token, position) pairs in device memory. forward() uploads the step's
// tokens, positions, slots and mask rows, writes the K/V on the device, runs
// synthetic_logits there and copies back only the logits (what the decoder
// and its trace need), or nothing when the caller's device selector reads
// them in place (StepInput::logits_may_stay_on_device: then the forward waits
// for nothing, and its kernels' status rides back with the selector's
// answer, DeviceLogits::status). It reads a mask builder's device rows in
// place too (StepInput::mask_device), and hands their status on with its
// own. Such a decode forward is padded to its bucket of query counts
// (core/model/decode_buckets.h) and replays a CUDA graph captured once per
// bucket and set of buffers; the kernels read the live counts from device
// memory. Bit-identical logits to SyntheticModel by construction;
// tests/cuda checks it on random inputs.
// Plain C++ header: no CUDA types, so app/ and tests include it with g++.
#pragma once
#include <map>
#include <memory>

#include "core/model/synthetic_model.h"
#include "cuda/synthetic_logits.cuh"

namespace triescope::cuda {

class CudaSyntheticModel final : public Model {
 public:
  // Throws Error when no CUDA device is usable, naming the runtime's answer.
  explicit CudaSyntheticModel(SyntheticConfig cfg);
  ~CudaSyntheticModel() override;
  int32_t vocab_size() const override { return cfg_.vocab_size; }
  void forward(const StepInput& in, Logits& out) override;
  bool reads_device_mask() const override { return true; }
  void compact(const CompactionPlan& plan) override;
  void reset() override;
  // Identical to SyntheticModel's, so CPU and CUDA trace headers diff equal.
  nlohmann::json describe() const override { return description_; }
  KvShape kv_shape() const override { return cfg_.nominal_shape; }
  const SyntheticConfig& config() const { return cfg_; }
  // Slots the device cache can hold before it grows.
  int32_t capacity_slots() const;
  // The decode forwards run as captured CUDA graphs (core/model/decode_buckets.h):
  // graphs captured, and replays by bucket (a step's padded query count).
  struct CapturedForwards {
    int64_t captures = 0;
    std::map<int32_t, int64_t> replays_by_bucket;
  };
  const CapturedForwards& captured_forwards() const { return captured_; }

 private:
  struct Device;
  void grow_cache(int32_t num_slots);
  void upload_step_ints(const StepInput& in, int32_t rows);
  void forward_eager(const StepInput& in);
  void forward_captured(const StepInput& in, int32_t bucket);
  void launch_forward(int32_t rows, int32_t num_slots, const uint64_t* mask, int32_t words_per_row, bool sizes_on_device);
  CapturedForwards captured_;
  SyntheticConfig cfg_;
  nlohmann::json description_;
  std::unique_ptr<Device> dev_;
};

}  // namespace triescope::cuda
