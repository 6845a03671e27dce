#include "core/select/topk_candidates.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"
#include "core/common/parallel_rows.h"

namespace triescope {

namespace {
// The order of the result: score descending, then flat index ascending.
bool ranks_before(const ScoredCandidate& a, const ScoredCandidate& b) { return a.score > b.score || (a.score == b.score && a.flat < b.flat); }

// Offers row r's candidates to `best`, a heap of at most k whose front is
// the worst of them: O(vocab) compares against that front, no copy of every
// candidate (a 15 x 32,000 step used to materialise 480,000 of them).
void offer_row(const double* row, int32_t r, int32_t vocab, double beam_score, size_t k, std::vector<ScoredCandidate>& best) {
  for (int32_t v = 0; v < vocab; ++v) {
    if (!std::isfinite(row[v])) continue;  // -inf: a masked token; NaN is never a candidate (as on the device)
    const ScoredCandidate c{beam_score + row[v], int64_t{r} * vocab + v};
    if (best.size() < k) {
      best.push_back(c);
      std::push_heap(best.begin(), best.end(), ranks_before);
    } else if (ranks_before(c, best.front())) {
      std::pop_heap(best.begin(), best.end(), ranks_before);
      best.back() = c;
      std::push_heap(best.begin(), best.end(), ranks_before);
    }
  }
}

const double* row_of(const double* logprobs, int32_t r, int32_t vocab) { return logprobs + static_cast<size_t>(r) * static_cast<size_t>(vocab); }
}  // namespace

// Each row's k best (the k best of all rows are among them, the order being
// total), rows spread over parallel_rows's threads; then the k best of those.
std::vector<ScoredCandidate> topk_candidates(const double* logprobs, int32_t rows, int32_t vocab, const double* beam_scores, int32_t k,
                                             int32_t threads) {
  TS_CHECK(rows >= 0 && vocab >= 1 && k >= 0, "topk_candidates: bad sizes (rows " << rows << ", vocab " << vocab << ", k " << k
                                                                                << ")");
  const size_t keep = static_cast<size_t>(std::min<int64_t>(k, int64_t{rows} * vocab));
  std::vector<ScoredCandidate> best;
  if (keep == 0) return best;
  std::vector<std::vector<ScoredCandidate>> per_row(static_cast<size_t>(rows));
  parallel_rows(
      rows, [&](int32_t r) { offer_row(row_of(logprobs, r, vocab), r, vocab, beam_scores[r], keep, per_row[static_cast<size_t>(r)]); },
      threads, vocab);
  for (const auto& row : per_row) best.insert(best.end(), row.begin(), row.end());
  const size_t n = std::min(keep, best.size());
  std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(n), best.end(), ranks_before);
  best.resize(n);
  return best;
}

}  // namespace triescope
