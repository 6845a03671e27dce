// The log-normaliser of one logits row, log(sum_v exp(x_v)), in double, in
// one pass over the row: a running maximum and 32 running partial sums of
// exponentials, rescaled when a block of 32 logits raises the maximum. A
// constrained step that ranks only the allowed tokens needs nothing else
// from the full vocabulary, so no log-softmax row is written.
//
// Every path (AVX-512, AVX2 + FMA, portable; chosen at run time) does the
// same IEEE operations in the same order (FMA-based exp over a 16-entry
// 2^(j/16) table, lane i of 32 summing the logits i mod 32, then the lane
// sum in order and lse_math::log_positive), so the result is bit-identical
// on every machine, and on the device: cuda/row_log_normaliser.cuh replays
// the pass with the same arithmetic (core/select/lse_math.h). Against a
// direct two-pass formula (libm exp, one long double sum) it differs by
// rounding only (tests/core/test_log_normaliser.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace triescope {

// The pass's state at the end of a row: lane i's sum of exponentials of
// the logits i mod 32 relative to mx (lse_math::kLanes), the row's maximum,
// and whether any logit was finite. A device that replays the pass
// (cuda/row_log_normaliser.cuh) gets these bit for bit.
struct LogNormaliserParts {
  double partial[32] = {};
  double mx = 0.0;
  bool started = false;
};
LogNormaliserParts row_log_normaliser_parts(const float* x, int32_t vocab, const char* who = "log normaliser");

// log(sum exp(x[0 .. vocab))); -inf when every logit is -inf. Throws
// triescope::Error naming `who` and the position on a NaN or +inf logit.
double row_log_normaliser(const float* x, int32_t vocab, const char* who = "log normaliser");

// The same pass, also collecting the tokens a dense constraint row allows
// (bit v of `allowed`, LSB first) whose logit may still matter to a ranking:
// token v is written to out_tokens (ascending) unless
// x[v] <= bound + (the running maximum when its block was read). The running
// maximum never exceeds the final log-normaliser, so with bound = T - beam
// score every token whose score beam + x[v] - lse could exceed T is kept.
// bound = -inf keeps every allowed token. Returns the log-normaliser; *count
// = tokens written (out_tokens holds room for vocab).
double row_log_normaliser_allowed(const float* x, int32_t vocab, const uint64_t* allowed, double bound, int32_t* out_tokens,
                                  int32_t* count, const char* who = "log normaliser");

// exp(d) for d <= 0 as the normaliser computes it (0 below -700); relative
// error below 1e-15 + 3.4e-17 |d| (the second term from the one-FMA range
// reduction; see log_normaliser.cpp for what it does to a sum); for tests.
double log_normaliser_exp(double d);
// "avx512", "avx2" or "portable": the path row_log_normaliser takes now.
const char* log_normaliser_isa();
// Caps the path at "avx512", "avx2" or "portable" ("best": no cap), for
// tests comparing the paths bit for bit; false when this machine cannot run
// the path asked for (a lower one runs instead).
bool log_normaliser_use(const std::string& path);

// Log-softmax of one logits row in double, the reference the beam decoders
// use: out[v] = double(logits[v]) - log_softmax_lse(logits, vocab).
// Throws Error naming the position on a NaN or +inf logit.
void log_softmax_row(const float* logits, int32_t vocab, double* out);
// The log-normaliser log_softmax_row subtracts: row_log_normaliser's, so a
// device that computes it (cuda/row_log_normaliser.cuh) and subtracts it
// itself gets the reference's log-probs exactly (cuda/device_selector.h).
double log_softmax_lse(const float* logits, int32_t vocab);

// log_softmax_row of rows[i] into out + i x vocab for every row, on
// `threads` threads (0: parallel_rows's default when there is enough work,
// else one); the same bits as the loop whatever the thread count.
void log_softmax_rows(const std::vector<const float*>& rows, int32_t vocab, double* out, int32_t threads = 0);

}  // namespace triescope
