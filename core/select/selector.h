// A beam step's selection as a seam: the k best (beam, token) candidates of
// a step's rows, best first, in topk_candidates' order (score descending,
// then flat index row * vocab + token ascending). Planned once per decode
// (the most rows, the vocabulary, the most candidates a step asks for: a
// device selector allocates its buffers there), then run once per step.
// CpuSelector is the reference (log_softmax_rows + topk_candidates, what
// the beam decoders called before the seam); the CUDA backend installs
// cuda::DeviceSelector (cuda/device_selector.h) through
// DecodeOptions::make_selector, whose candidates and scores are the
// reference's bit for bit (docs/cuda.md, "Beam selection on the device").
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/common/device_handles.h"
#include "core/select/topk_candidates.h"

namespace triescope {

struct SelectionShape {
  int32_t rows = 0;   // the most rows a step ranks (>= 1)
  int32_t vocab = 0;  // entries per row (>= 1)
  int32_t k = 0;      // the most candidates a step asks for (>= 1)
};

class Selector {
 public:
  virtual ~Selector() = default;
  // Sizes for the whole decode; a run over more rows or a larger k throws.
  virtual void plan(const SelectionShape& shape) = 0;
  // log_softmax_row of each logits row (rows[r]: [vocab]), then the k best
  // beam_scores[r] + logprob[r][v] over the finite log-probs.
  virtual std::vector<ScoredCandidate> run_logits(const std::vector<const float*>& rows, const double* beam_scores /* [rows] */,
                                                  int32_t k) = 0;
  // The k best beam_scores[r] + logprobs[r * vocab + v] over the finite
  // log-probs (a constraint's -inf masked them), as topk_candidates.
  virtual std::vector<ScoredCandidate> run_logprobs(const double* logprobs /* [rows x vocab] */, int32_t rows,
                                                    const double* beam_scores /* [rows] */, int32_t k) = 0;
  // "cpu" or the device's name, for errors and tests.
  virtual const char* name() const = 0;
  // Whether run_device_logits reads a model's device logits in place (a
  // device selector of the model's backend); a decoder that sees true asks
  // its model to leave the logits there (StepInput::logits_may_stay_on_device).
  virtual bool reads_device_logits() const { return false; }
  // run_logits over rows row_ids[r] of the logits a model left on its
  // device (`logits.rows` [any x vocab], ready in order on `logits.stream`;
  // its statuses, when not null, are read back with the answer): only the k
  // candidates cross to the host. This base refuses with an Error naming
  // the selector.
  virtual std::vector<ScoredCandidate> run_device_logits(const DeviceLogits& logits, int32_t vocab, const std::vector<int32_t>& row_ids,
                                                         const double* beam_scores, int32_t k);
};

// Builds a decode's selector; empty: the CPU reference.
using SelectorFactory = std::function<std::unique_ptr<Selector>()>;

// The reference selector: log_softmax_rows and topk_candidates on the host.
class CpuSelector final : public Selector {
 public:
  void plan(const SelectionShape& shape) override;
  std::vector<ScoredCandidate> run_logits(const std::vector<const float*>& rows, const double* beam_scores, int32_t k) override;
  std::vector<ScoredCandidate> run_logprobs(const double* logprobs, int32_t rows, const double* beam_scores, int32_t k) override;
  const char* name() const override { return "cpu"; }

 private:
  SelectionShape shape_;
  std::vector<double> logprobs_;  // [rows x vocab] run_logits' log-softmax
};

// make() when set, else a CpuSelector; planned with `shape` either way.
std::unique_ptr<Selector> selector_make(const SelectorFactory& make, const SelectionShape& shape);

// Throws Error naming `who` unless `rows` rows and k candidates fit `shape`.
void selection_shape_check(const SelectionShape& shape, int32_t rows, int32_t k, const char* who);

}  // namespace triescope
