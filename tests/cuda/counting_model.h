// A model that snapshots the host-wait counters (cuda/host_waits.h) at each
// forward, then runs the model it wraps: between two forwards of a beam
// search lies one decode step (the selection of step i, then the feed of
// step i + 1). It also counts the forwards whose mask rows came on the
// device and those whose logits stayed there.
#pragma once
#include <vector>

#include "core/model/model.h"
#include "cuda/host_waits.h"

namespace triescope::testing {

class CountingModel final : public Model {
 public:
  explicit CountingModel(Model& m) : m_(m) {}
  int32_t vocab_size() const override { return m_.vocab_size(); }
  void forward(const StepInput& in, Logits& out) override {
    at.push_back(cuda::host_wait_counts());
    device_mask_steps += in.mask_device.rows != nullptr;
    m_.forward(in, out);
    device_logits_steps += out.on_device();
  }
  bool reads_device_mask() const override { return m_.reads_device_mask(); }
  void compact(const CompactionPlan& plan) override {
    ++compactions;
    m_.compact(plan);
  }
  void reset() override { m_.reset(); }
  nlohmann::json describe() const override { return m_.describe(); }
  KvShape kv_shape() const override { return m_.kv_shape(); }
  std::vector<cuda::HostWaitCounts> at;  // the counters as each forward began
  int32_t compactions = 0;
  int32_t device_mask_steps = 0;    // forwards whose mask rows stayed on the device
  int32_t device_logits_steps = 0;  // forwards whose logits stayed on the device

 private:
  Model& m_;
};

}  // namespace triescope::testing
