#include "core/select/selector.h"

#include "core/common/error.h"
#include "core/select/log_normaliser.h"

namespace triescope {

void selection_shape_check(const SelectionShape& shape, int32_t rows, int32_t k, const char* who) {
  TS_CHECK(rows >= 0 && rows <= shape.rows, who << ": a step ranks " << rows << " rows, planned for at most " << shape.rows);
  TS_CHECK(k >= 0 && k <= shape.k, who << ": a step asks for " << k << " candidates, planned for at most " << shape.k);
}

void CpuSelector::plan(const SelectionShape& shape) {
  TS_CHECK(shape.rows >= 1 && shape.vocab >= 1 && shape.k >= 1, "cpu selector: bad plan (rows " << shape.rows << ", vocab "
                                                                                                 << shape.vocab << ", k " << shape.k
                                                                                                 << ")");
  shape_ = shape;
  logprobs_.reserve(static_cast<size_t>(shape.rows) * static_cast<size_t>(shape.vocab));
}

std::vector<ScoredCandidate> CpuSelector::run_logits(const std::vector<const float*>& rows, const double* beam_scores, int32_t k) {
  const auto n = static_cast<int32_t>(rows.size());
  selection_shape_check(shape_, n, k, "cpu selector");
  logprobs_.resize(static_cast<size_t>(n) * static_cast<size_t>(shape_.vocab));
  log_softmax_rows(rows, shape_.vocab, logprobs_.data());
  return topk_candidates(logprobs_.data(), n, shape_.vocab, beam_scores, k);
}

std::vector<ScoredCandidate> CpuSelector::run_logprobs(const double* logprobs, int32_t rows, const double* beam_scores, int32_t k) {
  selection_shape_check(shape_, rows, k, "cpu selector");
  return topk_candidates(logprobs, rows, shape_.vocab, beam_scores, k);
}

std::unique_ptr<Selector> selector_make(const SelectorFactory& make, const SelectionShape& shape) {
  std::unique_ptr<Selector> s = make ? make() : std::make_unique<CpuSelector>();
  TS_CHECK(s != nullptr, "selector: the backend's selector factory returned none");
  s->plan(shape);
  return s;
}

std::vector<ScoredCandidate> Selector::run_device_logits(const DeviceLogits&, int32_t, const std::vector<int32_t>&, const double*, int32_t) {
  TS_FAIL("selector " << name() << ": reads no device logits (reads_device_logits() is false)");
}

}  // namespace triescope
