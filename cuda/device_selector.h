// The beam step's selection on the device (core/select/selector.h's seam):
// each row's log-normaliser (cuda/row_log_normaliser.cuh), then the radix
// top-k of cuda/topk_candidates.cuh over the step's rows, with the beam width
// the sample asks for (k = 2b). Installed by the CUDA backend
// (DecodeOptions::make_selector in sample_install).
//
// Its candidates and their scores are CpuSelector's bit for bit, so a trace
// on --backend cuda equals the CPU's: the log-normaliser is the reference's
// own pass (row_log_normaliser, replayed with core/select/lse_math.h's
// arithmetic), and the rest is what IEEE rounds the same everywhere:
// double(logit) - lse and beam score + log-prob, then exact comparisons
// (docs/cuda.md, "Beam selection on the device"). Logits a model left on the
// device (run_device_logits) never cross to the host: one download a step,
// the status, the count and the k candidates.
//
// A k over kTopkMaxK (a beam width over 512) runs on the CPU selector.
// Plain C++ header: no CUDA types.
#pragma once
#include <array>
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
  // Device: the uploaded logits rows, their log-normalisers, then the top k.
  std::vector<ScoredCandidate> run_logits(const std::vector<const float*>& rows, const double* beam_scores, int32_t k) override;
  // Device: the log-prob rows (a constraint masked them on the host), then the top k.
  std::vector<ScoredCandidate> run_logprobs(const double* logprobs, int32_t rows, const double* beam_scores, int32_t k) override;
  const char* name() const override { return "cuda"; }
  // True when the planned k fits the device ranking: a model's device logits are read in place.
  bool reads_device_logits() const override;
  // Device: the rows gathered from the model's logits, their log-normalisers, then the top k, all on `stream`.
  std::vector<ScoredCandidate> run_device_logits(const DeviceLogits& logits, int32_t vocab, const std::vector<int32_t>& row_ids,
                                                 const double* beam_scores, int32_t k) override;
  // True when the planned k fits the device ranking (k <= kTopkMaxK).
  bool on_device() const { return !on_host_; }

 private:
  struct Device;
  // The top k of the rows already uploaded (logits + lse, or log-probs).
  // `upstream_status`: DeviceLogits::status and ::input_status, read back with the answer.
  std::vector<ScoredCandidate> select_uploaded(int32_t rows, const double* beam_scores, int32_t k, bool from_logits, void* stream,
                                              const std::array<void*, 2>& upstream_status = {});

  std::unique_ptr<Device> dev_;
  SelectionShape shape_;
  bool on_host_ = false;
  CpuSelector host_;         // k over kTopkMaxK
};

}  // namespace triescope::cuda
