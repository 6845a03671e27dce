// STATIC's masking step on the CPU: Algorithm 1 phase 2 (dense lookup for
// steps < d, VNTK after) and Algorithm 2 (the Vectorized Node Transition
// Kernel) over a batch of B x M beams. This is the reference the CUDA twin
// is checked against, so it follows the paper's data flow literally:
// boundary lookup, fixed-width speculative slice of B_t entries (reads past
// the edge array return 0, like jnp.take mode="fill"), branch-free
// sanitisation, and a projection (scatter) into a dense row.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/constraint/mask_both_precisions.h"
#include "core/constraint/transition_matrix.h"

namespace triescope {

// Algorithm 2 for n beams at sparse step t (t >= d): logprobs [n x |V|] are
// replaced by the projection of the B_t speculative candidates. Outputs (each
// may be null): cand_tokens [n x B_t] (|V| for an invalid slot), cand_next
// [n x B_t] (0 for an invalid slot, paper line 16), valid [n] child counts.
template <class T>
void vntk_sparse(const TransitionMatrix& tm, const int64_t* states, int32_t n, int32_t step, T* logprobs,
                 int32_t* cand_tokens, int64_t* cand_next, int32_t* valid);

// Algorithm 1 DenseLookup for step t < d: Where(D[prefix], logprobs, -inf).
template <class T>
void dense_lookup(const TransitionMatrix& tm, const int64_t* states, int32_t n, int32_t step, T* logprobs, int32_t* valid);

// State after `token`: dense tables (stacked) or rank (compact) for t < d,
// a scan of the B_t-wide slice for t >= d (the gather of Alg. 1 phase 4).
int64_t static_next_state(const TransitionMatrix& tm, int64_t state, int32_t token, int32_t step);

// STATIC as a ConstraintIndex (either layout, any d).
class VntkIndex final : public MaskBothPrecisions<VntkIndex> {
 public:
  explicit VntkIndex(std::shared_ptr<const TransitionMatrix> tm) : tm_(std::move(tm)) {}
  std::string name() const override;
  int32_t vocab_size() const override { return tm_->vocab_size; }
  int32_t length() const override { return tm_->length; }
  int64_t root_state() const override { return 0; }
  int64_t next_state(int64_t state, int32_t token, int32_t step) const override { return static_next_state(*tm_, state, token, step); }
  int64_t canonical_state(int64_t state, int32_t) const override { return state; }
  bool exact() const override { return true; }
  int64_t memory_bytes() const override { return tm_->memory().total(); }
  nlohmann::json describe() const override;
  void trace_extra(int64_t state, int32_t step, nlohmann::json& rec) const override;
  const TransitionMatrix& matrix() const { return *tm_; }

 private:
  friend class MaskBothPrecisions<VntkIndex>;
  template <class T>
  void mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path);
  std::shared_ptr<const TransitionMatrix> tm_;
};

}  // namespace triescope
