// STATIC's VNTK index for the cuda backend: a ConstraintIndex whose masks,
// valid counts, CSR rows read and next states come from the device masking
// kernel (cuda/static/static_mask.cuh, the masking part of the fused step in
// cuda/static/static_step.cuh) fed the decoder's own log-probs, so the decoders keep
// their selection and a cuda trace stays comparable record for record with
// the CPU's. The cuda backend builds it (constraint_index_make below, its
// BackendSpec::make_constraint_index) for a sample whose constraint has impl
// "vntk" (either layout, any d) and ranks fully.
//
// Each mask() call computes, per row, the next state of every token the row
// allows (dense steps: a [n x |V|] table; sparse steps: the B_t slots) and
// keeps them, so next_state() for a state masked in the same step is a host
// lookup of device results; a (state, step) not masked last is sent through
// the kernel alone. trace_extra() records the row the kernel read.
//
// Plain C++ header (the device buffers are behind a pointer).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/constraint/mask_both_precisions.h"
#include "core/constraint/constraint_index_request.h"
#include "core/constraint/vntk.h"
#include "cuda/verify_exec.h"

namespace triescope::cuda {

class StaticIndexCuda final : public MaskBothPrecisions<StaticIndexCuda> {
 public:
  // `cpu` supplies the TransitionMatrix and the describe()/name() metadata (so
  // trace headers equal the CPU's). exec = device uploads the matrix (throws
  // naming a missing device); host_twin runs the kernel's row algorithm on
  // the host (CPU tests).
  StaticIndexCuda(std::shared_ptr<const VntkIndex> cpu, VerifyExec exec);
  ~StaticIndexCuda() override;

  std::string name() const override { return cpu_->name(); }
  int32_t vocab_size() const override { return cpu_->vocab_size(); }
  int32_t length() const override { return cpu_->length(); }
  int64_t root_state() const override { return cpu_->root_state(); }
  int64_t next_state(int64_t state, int32_t token, int32_t step) const override;
  int64_t canonical_state(int64_t state, int32_t level) const override { return cpu_->canonical_state(state, level); }
  bool exact() const override { return true; }
  int64_t memory_bytes() const override { return cpu_->memory_bytes(); }
  nlohmann::json describe() const override { return cpu_->describe(); }
  void trace_extra(int64_t state, int32_t step, nlohmann::json& rec) const override;

  VerifyExec exec() const { return exec_; }
  // Kernel runs so far (mask calls plus next-state fallbacks), for tests.
  int64_t kernel_runs() const { return runs_; }
  int64_t fallback_runs() const { return fallbacks_; }

  // What one run of the row algorithm produced (host copies).
  struct Rows {
    int32_t step = -1;
    bool dense = false;
    int32_t bt = 0;
    std::vector<int64_t> states;      // [n] as given
    std::vector<int32_t> valid;       // [n]
    std::vector<int64_t> row_range;   // [n x 2]
    std::vector<int64_t> dense_next;  // [n x V]
    std::vector<int32_t> cand_tok;    // [n x B_t]
    std::vector<int64_t> cand_next;   // [n x B_t]
    std::unordered_map<int64_t, int32_t> row_of;  // state -> a row holding it
  };

 private:
  template <class T>
  void run(const int64_t* states, int32_t n, int32_t step, T* lp, Rows& out) const;
  friend class MaskBothPrecisions<StaticIndexCuda>;
  template <class T>
  void mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path);

  std::shared_ptr<const VntkIndex> cpu_;
  VerifyExec exec_;
  struct Device;
  std::unique_ptr<Device> dev_;
  Rows last_;
  mutable int64_t runs_ = 0, fallbacks_ = 0;
};

// Whether the cuda backend runs a constraint's index on the device: impl
// "vntk" ranked fully. The baselines (pointer trie, PPV, hash bitmap) have no
// kernel, and "ranking": "sparse" ranks with the host StaticStep over a host
// VntkIndex: both are the backend's documented host part.
bool static_index_on_device(const std::string& impl, bool sparse_ranking);

// The cuda backend's ConstraintIndexMaker: a StaticIndexCuda over the
// requested matrix where static_index_on_device, else the CPU's index
// (core's constraint_index_make).
std::shared_ptr<ConstraintIndex> constraint_index_make(const ConstraintIndexRequest& request, VerifyExec exec);

}  // namespace triescope::cuda
