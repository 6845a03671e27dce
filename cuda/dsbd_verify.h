// The device side of speculative verification, written as inline
// __host__ __device__ code that one thread block runs cooperatively
// (cuda/dsbd_verify.cu) and that a plain C++ test runs with a block of one
// thread (tests/cuda/test_cpu_twins.cpp) against core's CPU reference:
//  - dsbd_verify_block: Algorithm 1 lines 13-29 over one layer (the twin of
//    core's dsbd_verify_layer, core/decode/dsbd.cpp);
//  - speculative_verify_block: the chain verification of plain speculative
//    decoding (the twin of the verify loop in core/decode/speculative.cpp).
//
// Exactness. Decisions must equal the CPU's, so every floating-point value
// that feeds one is computed with the CPU's operations in the CPU's order:
//  - element-wise steps (p' = p, p' = max(0, p' - q), p' /= mass, p' = q) run
//    in parallel over the block: each element is one IEEE operation, the same
//    on any thread;
//  - every sum (the residual's mass, sample_index's total and running
//    prefix) is a sequential left-to-right scan by thread 0, because a tree
//    reduction rounds differently and could move an inverse-CDF boundary;
//  - no expression has the shape a * b + c, so nvcc's FMA contraction
//    cannot change a rounding.
// The draws are cuda/philox.cuh's, on the CPU's counters.
// Written independently of core/decode/dsbd.cpp (CONVENTIONS: a reference
// shares no code with what it checks), except DSBD's scalar formulas (line
// 17's accept probability, line 22's residual), which both take from
// core/decode/dsbd_math.h, itself checked against the paper's expressions.
#pragma once
#include <cstdint>
#include <memory>

#include "core/decode/dsbd_math.h"
#include "cuda/philox.cuh"
#include "cuda/verify_exec.h"

namespace triescope {
class DsbdLayerVerifier;
class SpeculativeVerifier;
}  // namespace triescope

namespace triescope::cuda {

// The verifiers the backend installs (cuda/dsbd_verify.cpp): DSBD layer
// verification (Algorithm 1 lines 13-29) and speculative chain verification
// over the block code below. Device: throws when no device is usable.
std::shared_ptr<DsbdLayerVerifier> make_dsbd_verifier(VerifyExec exec);
std::shared_ptr<SpeculativeVerifier> make_speculative_verifier(VerifyExec exec);

// One tested draft (core: LayerDecision).
struct VerifyDecision {
  int64_t pair;        // index into the layer's domain
  int32_t draft;       // index into the drafts; -1 for none
  int32_t accepted;    // 1 / 0
  double accept_prob;  // min(1, ratio)
  double u;            // the uniform it was tested against
};

enum class VerifyError : int32_t {
  none = 0,
  draft_out_of_range = 1,  // a draft pair outside [0, n)
  no_positive_entry = 2,   // sample_index over a distribution with no positive entry
  empty_residual = 3,      // speculative: max(0, p - q) has no mass after a rejection
};

// Block-level scalars the threads share (in __shared__ memory on the device).
struct VerifyShared {
  int32_t flag;   // thread 0's decision, broadcast
  double mass;    // thread 0's sequential sum, broadcast
};

struct DsbdVerifyArgs {
  const double* p;         // [n] p_beam^(l) over the layer's (beam, token) domain
  const double* q;         // [n] q_beam^(l) over the same domain
  int64_t n;
  const int64_t* drafts;   // [num_drafts] surviving draft pairs, in draft order
  int32_t num_drafts;
  int32_t width;           // W_L^(l) >= 1
  int32_t ratio_q_over_p;  // 0: p/q (the rule used); 1: q/p (negative control)
  PhiloxCoords draws;      // (seed, iteration, l, 0) as dsbd_decode draws
  double* pp;              // [n] scratch: p'
  VerifyDecision* tested;  // [num_drafts] out: decisions, in order
  int64_t* outputs;        // [width] out: accepted drafts, then one from p', the rest from p_beam
  int32_t* counts;         // [4] out: num_tested, num_outputs, passed, VerifyError
};

// Thread 0 only: core's sample_index (inverse CDF over the sequential prefix
// sums, zero entries skipped, the last positive index when u * total is not
// reached). Returns -1 when no entry is positive.
TS_HD inline int64_t verify_sample_index(const double* prob, int64_t n, double u) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += prob[i];
  const double target = u * total;
  double acc = 0.0;
  int64_t last = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double x = prob[i];
    if (x <= 0.0) continue;  // as the CPU: a NaN is not skipped
    acc += x;
    last = i;
    if (target < acc) return i;
  }
  return last;
}

// Block-cooperative Algorithm 1 lines 13-29. `Block` supplies tid(),
// size() and sync() (a __syncthreads() on the device, nothing on the host).
template <class Block>
TS_HD void dsbd_verify_block(const DsbdVerifyArgs& a, VerifyShared& sh, Block& blk) {
  const int64_t tid = blk.tid(), nt = blk.size();
  for (int64_t i = tid; i < a.n; i += nt) a.pp[i] = a.p[i];  // line 13: p' = p_beam
  if (tid == 0) {
    a.counts[0] = 0;
    a.counts[1] = 0;
    a.counts[2] = 0;
    a.counts[3] = 0;
  }
  blk.sync();
  int32_t accepted = 0, num_out = 0;  // every thread keeps the same copy
  for (int32_t i = 0; i < a.num_drafts; ++i) {
    if (tid == 0) {
      const int64_t x = a.drafts[i];
      if (x < 0 || x >= a.n) {
        a.counts[3] = static_cast<int32_t>(VerifyError::draft_out_of_range);
        sh.flag = -1;
      } else {
        VerifyDecision d;
        d.pair = x;
        d.draft = i;
        d.accept_prob = dsbd_math::accept_prob(a.pp[x], a.q[x], a.ratio_q_over_p != 0);  // line 17
        d.u = philox_uniform_hd(a.draws, static_cast<uint32_t>(i), kStreamVerifyAccept);
        d.accepted = d.u < d.accept_prob ? 1 : 0;
        a.tested[i] = d;
        a.counts[0] = i + 1;
        if (d.accepted) a.outputs[num_out] = x;
        sh.flag = d.accepted;
      }
    }
    blk.sync();
    const int32_t flag = sh.flag;
    blk.sync();  // everyone has read sh.flag before thread 0 may write it again
    if (flag < 0) return;
    if (flag == 1) {
      ++num_out;
      if (++accepted == a.width) {  // lines 23-25
        if (tid == 0) {
          a.counts[1] = num_out;
          a.counts[2] = 1;
        }
        return;
      }
      for (int64_t k = tid; k < a.n; k += nt) a.pp[k] = a.p[k];  // line 19
    } else {
      for (int64_t k = tid; k < a.n; k += nt) a.pp[k] = dsbd_math::residual(a.pp[k], a.q[k]);  // line 22: p' = norm(max(0, p' - q))
      blk.sync();
      if (tid == 0) {
        double mass = 0.0;
        for (int64_t k = 0; k < a.n; ++k) mass += a.pp[k];
        sh.mass = mass;
      }
      blk.sync();
      const double mass = sh.mass;
      if (dsbd_math::residual_has_mass(mass)) {
        for (int64_t k = tid; k < a.n; k += nt) a.pp[k] = a.pp[k] / mass;
      } else {  // p' == q: nothing left to correct
        for (int64_t k = tid; k < a.n; k += nt) a.pp[k] = a.q[k];
      }
    }
    blk.sync();
  }
  // Lines 26-29: one beam from p', the rest from p_beam.
  if (tid == 0) {
    int64_t o = verify_sample_index(a.pp, a.n, philox_uniform_hd(a.draws, 0, kStreamResidualSample));
    if (o < 0) {
      a.counts[3] = static_cast<int32_t>(VerifyError::no_positive_entry);
    } else {
      a.outputs[num_out++] = o;
      for (uint32_t k = 0; num_out < a.width; ++k) {
        o = verify_sample_index(a.p, a.n, philox_uniform_hd(a.draws, k, kStreamTargetSample));
        if (o < 0) {
          a.counts[3] = static_cast<int32_t>(VerifyError::no_positive_entry);
          break;
        }
        a.outputs[num_out++] = o;
      }
    }
    a.counts[1] = num_out;
    a.counts[2] = 0;
  }
}

struct SpecVerifyArgs {
  const double* p;       // [(g + 1) x V] warped target distribution after each chain node (cur, draft 1..g)
  const double* q;       // [g x V] the draft distribution each draft token was drawn from
  const int32_t* tokens; // [g] the drafted tokens
  int32_t g;
  int32_t vocab;
  PhiloxCoords draws;    // (seed, iteration, -, 0); the layer is the draft's position j
  double* resid;         // [V] scratch
  VerifyDecision* tested;  // [g] out
  int32_t* counts;       // [4] out: num_tested, accepted, the next token, VerifyError
  int32_t* from;         // [1] out: 0 = every draft accepted (a token from p), 1 = residual
};

// Speculative decoding's verification (Leviathan et al. 2023, Alg. 1), the
// twin of core/decode/speculative.cpp's loop: draft j is accepted when
// u_j < min(1, p_j[x] / q_j[x]); the first rejection draws the next token
// from max(0, p_j - q_j) (left unnormalised, as the CPU does: sample_index
// scales u by its total); all accepted: the next token from p_{g+1}.
template <class Block>
TS_HD void speculative_verify_block(const SpecVerifyArgs& a, VerifyShared& sh, Block& blk) {
  const int64_t tid = blk.tid(), nt = blk.size();
  const int64_t V = a.vocab;
  if (tid == 0) {
    for (int k = 0; k < 4; ++k) a.counts[k] = 0;
    *a.from = 0;
    int32_t acc = 0, stop = 0;
    for (int32_t j = 1; j <= a.g && !stop; ++j) {
      const int32_t x = a.tokens[j - 1];
      VerifyDecision d;
      d.pair = x;
      d.draft = j - 1;
      if (x < 0 || x >= a.vocab) {
        a.counts[3] = static_cast<int32_t>(VerifyError::draft_out_of_range);
        sh.flag = -1;
        break;
      }
      PhiloxCoords c = a.draws;
      c.layer = static_cast<uint32_t>(j);
      d.accept_prob = dsbd_math::min1(a.p[static_cast<int64_t>(j - 1) * V + x] / a.q[static_cast<int64_t>(j - 1) * V + x]);
      d.u = philox_uniform_hd(c, 0, kStreamVerifyAccept);
      d.accepted = d.u < d.accept_prob ? 1 : 0;
      a.tested[j - 1] = d;
      a.counts[0] = j;
      if (d.accepted) ++acc;
      else stop = j;
    }
    a.counts[1] = acc;
    if (a.counts[3] == 0) sh.flag = stop;  // 0: all accepted; j: rejected at j
  }
  blk.sync();
  const int32_t stop = sh.flag;
  if (stop < 0) return;
  if (stop == 0) {
    if (tid == 0) {
      PhiloxCoords c = a.draws;
      c.layer = static_cast<uint32_t>(a.g + 1);
      const int64_t y = verify_sample_index(a.p + static_cast<int64_t>(a.g) * V, V, philox_uniform_hd(c, 0, kStreamTargetSample));
      if (y < 0) a.counts[3] = static_cast<int32_t>(VerifyError::no_positive_entry);
      a.counts[2] = static_cast<int32_t>(y);
      *a.from = 0;
    }
    return;
  }
  const double* pj = a.p + static_cast<int64_t>(stop - 1) * V;
  const double* qj = a.q + static_cast<int64_t>(stop - 1) * V;
  for (int64_t k = tid; k < V; k += nt) {
    const double d = pj[k] - qj[k];
    a.resid[k] = d > 0.0 ? d : 0.0;
  }
  blk.sync();
  if (tid == 0) {
    double mass = 0.0;
    for (int64_t k = 0; k < V; ++k) mass += a.resid[k];
    *a.from = 1;
    if (!(mass > 0.0)) {
      a.counts[3] = static_cast<int32_t>(VerifyError::empty_residual);
      a.counts[2] = -1;
    } else {
      PhiloxCoords c = a.draws;
      c.layer = static_cast<uint32_t>(stop);
      const int64_t y = verify_sample_index(a.resid, V, philox_uniform_hd(c, 0, kStreamResidualSample));
      if (y < 0) a.counts[3] = static_cast<int32_t>(VerifyError::no_positive_entry);
      a.counts[2] = static_cast<int32_t>(y);
    }
  }
}

}  // namespace triescope::cuda
