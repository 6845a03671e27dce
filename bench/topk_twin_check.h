// The CPU twin's verdict on a device top-k, for the CUDA benches (compiled as
// C++17 there, so they cannot include core's C++20 headers themselves).
#pragma once
#include <cstdint>
#include <string>

namespace triescope::bench {

// "" when (score, flat)[0, k) equal core's topk_candidates on the same
// log-probs and beam scores (count included, -1 past it), else what differs.
std::string topk_twin_mismatch(const double* logprobs, int32_t rows, int32_t vocab, const double* beam_scores, int32_t k,
                               const double* got_score, const int64_t* got_flat);
// The same from logits rows: the log-probs are core's log_softmax_rows of
// them (the decoders' reference, whose normaliser the device replays).
std::string topk_twin_mismatch_from_logits(const float* logits, int32_t rows, int32_t vocab, const double* beam_scores, int32_t k,
                                           const double* got_score, const int64_t* got_flat);

}  // namespace triescope::bench
