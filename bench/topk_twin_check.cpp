#include "bench/topk_twin_check.h"

#include <sstream>
#include <vector>

#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"

namespace triescope::bench {

std::string topk_twin_mismatch(const double* logprobs, int32_t rows, int32_t vocab, const double* beam_scores, int32_t k,
                               const double* got_score, const int64_t* got_flat) {
  const std::vector<ScoredCandidate> want = topk_candidates(logprobs, rows, vocab, beam_scores, k);
  for (int32_t j = 0; j < k; ++j) {
    const bool have = static_cast<size_t>(j) < want.size();
    const int64_t flat = have ? want[static_cast<size_t>(j)].flat : -1;
    if (got_flat[j] != flat || (have && got_score[j] != want[static_cast<size_t>(j)].score)) {
      std::ostringstream o;
      o << "rank " << j << ": device (" << got_score[j] << ", flat " << got_flat[j] << "), CPU twin ("
        << (have ? want[static_cast<size_t>(j)].score : 0.0) << ", flat " << flat << ")";
      return o.str();
    }
  }
  return {};
}

std::string topk_twin_mismatch_from_logits(const float* logits, int32_t rows, int32_t vocab, const double* beam_scores, int32_t k,
                                           const double* got_score, const int64_t* got_flat) {
  std::vector<const float*> row_ptrs;
  for (int32_t r = 0; r < rows; ++r) row_ptrs.push_back(logits + static_cast<size_t>(r) * static_cast<size_t>(vocab));
  std::vector<double> lp(static_cast<size_t>(rows) * static_cast<size_t>(vocab));
  log_softmax_rows(row_ptrs, vocab, lp.data());
  return topk_twin_mismatch(lp.data(), rows, vocab, beam_scores, k, got_score, got_flat);
}

}  // namespace triescope::bench
