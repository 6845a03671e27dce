// STATIC as a LogitsConstraint: plugs any ConstraintIndex (the CSR/VNTK
// index or a baseline) into trie_beam_search and batch_beam_search, records
// per-beam constraint info in the trace, and checks compliance of outputs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/json_reader.h"
#include "core/constraint/constraint_index.h"
#include "core/constraint/constraint_index_request.h"
#include "core/constraint/constraint_set.h"
#include "core/constraint/sample_constraint.h"
#include "core/constraint/static_step.h"
#include "core/constraint/transition_matrix.h"

namespace triescope {

// impl: "vntk" (CSR, layout and d from opt), "pointer_trie", "ppv_exact",
// "ppv_approx" (top_k logits), "hash_bitmap".
std::shared_ptr<ConstraintIndex> constraint_index_make(const std::string& impl, std::shared_ptr<const ConstraintSet> set,
                                                       TransitionMatrixOptions opt, int32_t top_k = 50);
// The CPU's ConstraintIndexMaker: constraint_index_make over the request.
std::shared_ptr<ConstraintIndex> constraint_index_make(const ConstraintIndexRequest& request);
const std::vector<std::string>& constraint_impl_names();

class StaticConstraint final : public SampleConstraint {
 public:
  // sparse_ranking: rank() ranks only the allowed tokens (core/constraint/
  // static_step.h); needs the CSR index (impl vntk).
  StaticConstraint(std::shared_ptr<const ConstraintSet> set, std::shared_ptr<ConstraintIndex> index, bool sparse_ranking = false);
  int64_t initial_state() const override { return index_->root_state(); }
  // Trace (when not null): one object per beam {beam, state, valid, path[, row, slice]}.
  void apply(const std::vector<int64_t>& states, int32_t step, double* logprobs, int32_t vocab, nlohmann::json* trace) override;
  bool rank(const std::vector<int64_t>& states, int32_t step, const std::vector<const float*>& rows, const double* beam_scores, int32_t vocab,
            int32_t k, std::vector<ScoredCandidate>& out, nlohmann::json* trace) override;
  int64_t next_state(int64_t state, int32_t token, int32_t step) const override { return index_->next_state(state, token, step); }
  nlohmann::json describe() const override;
  // The constraint file as the sample names it (relative to the sample's
  // folder): what describe() records, so a trace does not depend on the
  // directory the run started in.
  void set_sample_file(std::string file) { sample_file_ = std::move(file); }
  const std::string& sample_file() const { return sample_file_; }

  const ConstraintSet& set() const override { return *set_; }
  ConstraintIndex& index() { return *index_; }
  // "ranking": "sparse": rank() runs the host StaticStep over the CSR index.
  bool sparse_ranking() const { return step_ != nullptr; }

 private:
  void check_vocab(int32_t vocab) const;
  void trace_beams(const std::vector<int64_t>& states, int32_t step, const int32_t* valid, const MaskPath* path, nlohmann::json& trace) const;
  std::shared_ptr<const ConstraintSet> set_;
  std::shared_ptr<ConstraintIndex> index_;
  std::unique_ptr<StaticStep> step_;  // set when ranking sparsely
  std::string sample_file_;
  StaticStepResult step_result_;
};

// A sample's "constraint" object: {"file": path relative to the sample,
// "format": "text"|"npy"|"auto", "dense_levels": d, "layout":
// "stacked"|"compact", "impl": see constraint_index_make, "top_k": k,
// "ranking": "full" (mask every row, rank every token; the default) |
// "sparse" (rank the allowed tokens only; impl vntk)}. The index is built
// by `make_index` (the backend's, BackendSpec::make_constraint_index), or by
// the CPU's constraint_index_make when it is empty.
std::shared_ptr<StaticConstraint> static_constraint_from_json(JsonObjectReader r, int32_t vocab_size, const std::string& sample_path,
                                                              const ConstraintIndexMaker& make_index = {});

}  // namespace triescope
