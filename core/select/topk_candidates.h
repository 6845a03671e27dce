// The beam step's candidate selection as a separately callable function: the
// CPU twin of cuda/topk_candidates.cuh's topk_candidates. Same order as both beam
// decoders: score descending, then flat index (row * vocab + token)
// ascending, which is torch.topk's tie-break.
#pragma once
#include <cstdint>
#include <vector>

namespace triescope {

struct ScoredCandidate {
  double score = 0.0;  // beam score + token logprob
  int64_t flat = 0;    // row * vocab + token
  bool operator==(const ScoredCandidate&) const = default;
};

// The k best beam_scores[r] + logprobs[r * vocab + v] over the finite
// logprobs (-inf is a token a constraint masked; NaN is never a candidate,
// as on the device), best first; fewer than k when fewer are finite. Rows
// run on `threads` threads (0: parallel_rows's default when there is enough
// work, else one); the list is the same for every thread count.
std::vector<ScoredCandidate> topk_candidates(const double* logprobs /* [rows x vocab] */, int32_t rows, int32_t vocab,
                                             const double* beam_scores /* [rows] */, int32_t k, int32_t threads = 0);

}  // namespace triescope
