// The beam step's selection on the device (core/select/selector.h's seam):
// the radix top-k of cuda/topk_candidates.cuh over the step's rows, with the
// beam width the sample asks for (k = 2b). Installed by the CUDA backend
// (DecodeOptions::make_selector in sample_install).
//
// Its candidates and their scores are CpuSelector's bit for bit, so a trace
// on --backend cuda equals the CPU's: the one place where CUDA's and libm's
// arithmetic differ, a row's log-normaliser (exp and log in their last ulp,
// and the order of the sum), is taken from the host (log_softmax_lse, the
// reference's own), and the device does only what IEEE rounds the same
// everywhere: double(logit) - lse and beam score + log-prob, then exact
// comparisons (docs/cuda.md, "Beam selection on the device").
//
// A k over kTopkMaxK (a beam width over 512) runs on the CPU selector.
// Plain C++ header: no CUDA types.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/select/selector.h"

namespace triescope::cuda {

class DeviceSelector final : public Selector {
 public:
  DeviceSelector();  // throws when no device is usable
  ~DeviceSelector() override;
  DeviceSelector(const DeviceSelector&) = delete;
  DeviceSelector& operator=(const DeviceSelector&) = delete;

  // Allocates the device buffers for shape (the chunk workspace for any row count up to shape.rows).
  void plan(const SelectionShape& shape) override;
  // Host: each row's log_softmax_lse. Device: the logits rows, then the top k.
  std::vector<ScoredCandidate> run_logits(const std::vector<const float*>& rows, const double* beam_scores, int32_t k) override;
  // Device: the log-prob rows (a constraint masked them on the host), then the top k.
  std::vector<ScoredCandidate> run_logprobs(const double* logprobs, int32_t rows, const double* beam_scores, int32_t k) override;
  const char* name() const override { return "cuda"; }
  // True when the planned k fits the device ranking (k <= kTopkMaxK).
  bool on_device() const { return !on_host_; }

 private:
  struct Device;
  // The top k of the rows already uploaded (logits + lse, or log-probs).
  std::vector<ScoredCandidate> select_uploaded(int32_t rows, const double* beam_scores, int32_t k, bool from_logits);

  std::unique_ptr<Device> dev_;
  SelectionShape shape_;
  bool on_host_ = false;
  CpuSelector host_;         // k over kTopkMaxK
  std::vector<double> lse_;  // [rows] each row's log-normaliser, computed on the host
};

}  // namespace triescope::cuda
