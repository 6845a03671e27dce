// The paper's Algorithm 2 listing (the JAX code after Alg. 2, App. A.2's
// PyTorch mapping) written with LibTorch tensor ops: row-pointer (indptr)
// lookup, a fixed-width slice of B_t entries by arange + gather (reads past
// the edge array return 0, like jnp.take(mode="fill")), Where for the
// sanitisation, scatter into a [n x (|V| + 1)] row for the projection (the
// listing's dense mask), dense levels by indexing the bit-packed masks, then
// log-softmax, per-group top-k over every (beam, token) and the next states
// of the chosen. It is NOT the authors' released decoder
// (static_decoding/decoding_pt.py), which never scatters nor builds a full
// mask at sparse levels: it ranks the B_t candidates per beam directly
// (bench/static_peer_bench.py runs that code itself). It runs on any device
// LibTorch has (CPU here, CUDA with a CUDA LibTorch): the listing's data flow
// as the baseline bench_cuda measures the fused CUDA step against.
//
// This header is LibTorch-free (pimpl), so nvcc-compiled benchmarks can call it.
// Built only with TRIESCOPE_WITH_TORCH (library triescope::static_listing_torch).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/constraint/transition_matrix.h"

namespace triescope {

struct StaticListingTorchResult {
  std::vector<float> masked_logprobs;  // [n x V]: log-softmax, -inf where the constraint masks (empty unless asked for)
  std::vector<int32_t> valid;          // [n] allowed tokens per beam
  std::vector<double> top_score;       // [groups x k] best first: beam score + masked logprob
  std::vector<int64_t> top_flat;       // [groups x k] row * V + token (rows over all n); -1 past top_count
  std::vector<int64_t> top_next;       // [groups x k] state after the candidate; kDeadState past top_count
  std::vector<int32_t> top_count;      // [groups] finite candidates found (< k when fewer are allowed)
};

class StaticListingTorch {
 public:
  // Uploads the matrix once to `device` ("cpu", "cuda", "cuda:1", ...).
  StaticListingTorch(const TransitionMatrix& tm, const std::string& device);
  ~StaticListingTorch();
  StaticListingTorch(const StaticListingTorch&) = delete;
  StaticListingTorch& operator=(const StaticListingTorch&) = delete;

  // False (with the reason) when this LibTorch cannot use `device`.
  static bool device_usable(const std::string& device, std::string* why);
  // LibTorch's intra-op CPU threads (at::set_num_threads), for single-thread comparisons.
  static void set_cpu_threads(int n);
  // Bytes of the matrix's tensors on the device.
  int64_t device_bytes() const;

  // logits [n x V] (float), states [n], beam_scores [n]: copied to the device once, reused by run().
  void set_inputs(const float* logits, int32_t n, const int64_t* states, const double* beam_scores);
  // One step at trie level `step`: masks, top-k of each of `groups` equal
  // groups of rows (a batch's beams), next states of the chosen. Asynchronous
  // on CUDA; keep_masked keeps the [n x V] masked log-probs for result().
  void run(int32_t step, int32_t groups, int32_t k, bool keep_masked = false);
  // The same step with no constraint (log-softmax, per-group top-k): the
  // baseline a benchmark subtracts to get the constraint's own overhead.
  void run_unconstrained(int32_t groups, int32_t k);
  void synchronize() const;
  StaticListingTorchResult result() const;

  // The next-state gather of run(), for arbitrary (state, token) pairs at
  // `step` (kDeadState where the token is not allowed): exposes the same code
  // path to tests.
  std::vector<int64_t> next_states(const std::vector<int64_t>& states, const std::vector<int32_t>& tokens, int32_t step) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace triescope
