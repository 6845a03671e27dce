#include "core/select/topk_candidates.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"

namespace triescope {

std::vector<ScoredCandidate> topk_candidates(const double* logprobs, int32_t rows, int32_t vocab, const double* beam_scores,
                                             int32_t k) {
  TS_CHECK(rows >= 0 && vocab >= 1 && k >= 0, "topk_candidates: bad sizes (rows " << rows << ", vocab " << vocab << ", k " << k
                                                                                << ")");
  std::vector<ScoredCandidate> all;
  all.reserve(static_cast<size_t>(rows) * static_cast<size_t>(vocab));
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t v = 0; v < vocab; ++v) {
      const double l = logprobs[static_cast<size_t>(r) * static_cast<size_t>(vocab) + static_cast<size_t>(v)];
      if (std::isinf(l)) continue;
      all.push_back({beam_scores[r] + l, int64_t{r} * vocab + v});
    }
  const size_t kk = std::min(all.size(), static_cast<size_t>(k));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(kk), all.end(),
                    [](const ScoredCandidate& a, const ScoredCandidate& b) {
                      return a.score > b.score || (a.score == b.score && a.flat < b.flat);
                    });
  all.resize(kk);
  return all;
}

}  // namespace triescope
