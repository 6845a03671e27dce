#include "core/select/topk_candidates.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"

namespace triescope {

namespace {
// The order of the result: score descending, then flat index ascending.
bool ranks_before(const ScoredCandidate& a, const ScoredCandidate& b) { return a.score > b.score || (a.score == b.score && a.flat < b.flat); }
}  // namespace

// One pass over the rows keeping the k best so far in a heap whose front is
// the worst of them: O(rows x vocab) compares against that front, no copy of
// every candidate (a 15 x 32,000 step used to materialise 480,000 of them).
std::vector<ScoredCandidate> topk_candidates(const double* logprobs, int32_t rows, int32_t vocab, const double* beam_scores,
                                             int32_t k) {
  TS_CHECK(rows >= 0 && vocab >= 1 && k >= 0, "topk_candidates: bad sizes (rows " << rows << ", vocab " << vocab << ", k " << k
                                                                                << ")");
  std::vector<ScoredCandidate> best;
  best.reserve(static_cast<size_t>(std::min<int64_t>(k, int64_t{rows} * vocab)));
  if (k == 0) return best;
  for (int32_t r = 0; r < rows; ++r) {
    const double* row = logprobs + static_cast<size_t>(r) * static_cast<size_t>(vocab);
    for (int32_t v = 0; v < vocab; ++v) {
      if (!std::isfinite(row[v])) continue;  // -inf: a masked token; NaN is never a candidate (as on the device)
      const ScoredCandidate c{beam_scores[r] + row[v], int64_t{r} * vocab + v};
      if (best.size() < static_cast<size_t>(k)) {
        best.push_back(c);
        std::push_heap(best.begin(), best.end(), ranks_before);
      } else if (ranks_before(c, best.front())) {
        std::pop_heap(best.begin(), best.end(), ranks_before);
        best.back() = c;
        std::push_heap(best.begin(), best.end(), ranks_before);
      }
    }
  }
  std::sort_heap(best.begin(), best.end(), ranks_before);
  return best;
}

}  // namespace triescope
