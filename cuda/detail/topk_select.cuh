// Device-side pieces of the top-k candidate selection, shared by
// topk_candidates.cu (topk_candidates) and static_step.cu (the fused STATIC step):
// the candidate order and block_topk, a block-wide selection whose depth
// (barrier rounds) depends on the key width, not on k. .cu files only.
#pragma once
#ifndef __CUDACC__
#error "cuda/detail/topk_select.cuh is for .cu files"
#endif
#include <cstdint>

namespace triescope::cuda::detail {

// A candidate in the strict total order the CPU uses: higher score first,
// then lower flat index. flat < 0 marks "none". aux is a payload the order
// ignores (the fused step keeps the candidate's slice slot or workspace index).
struct Cand {
  double score;
  long long flat;
  int aux;  // no default initialiser: Cand lives in __shared__ arrays (which take no initialisers)
};
__device__ __forceinline__ bool better(const Cand& a, const Cand& b) {
  if (a.flat < 0) return false;
  if (b.flat < 0) return true;
  return a.score > b.score || (a.score == b.score && a.flat < b.flat);
}

// The order as one unsigned 128-bit key (hi, lo): a better candidate has the
// larger key. hi maps the double's order onto unsigned integers (-0 taken as
// +0, since they compare equal); lo = ~flat puts the lower flat index first.
__device__ __forceinline__ uint64_t score_key(double s) {
  const uint64_t b = static_cast<uint64_t>(__double_as_longlong(s == 0.0 ? 0.0 : s));
  return (b >> 63) ? ~b : (b | (uint64_t{1} << 63));
}
__device__ __forceinline__ uint64_t flat_key(long long flat) { return ~static_cast<uint64_t>(flat); }

constexpr unsigned kSelectThreads = 256;  // block_topk's block size: one radix bin per thread
constexpr int kRadixBits = 8;
constexpr unsigned kRadixBins = 1u << kRadixBits;
constexpr unsigned kGatherMax = 256;  // a threshold bin this small is ranked directly, not refined by more passes
static_assert(kSelectThreads == kRadixBins, "block_topk scans one bin per thread");

// block_topk's shared state (one per block).
struct TopkShared {
  unsigned hist[kRadixBins];
  unsigned warp_sum[kSelectThreads / 32];
  uint64_t prefix_hi, prefix_lo;  // the threshold's digits resolved so far
  uint64_t mask_hi, mask_lo;      // which bits they are
  unsigned need;                  // candidates still to take among those matching the prefix
  unsigned taken;
  unsigned staged;
  unsigned gathered;
  int next_pass;                  // the next digit to histogram (digits every matching candidate shares are skipped)
  uint64_t and_hi[2], or_hi[2];   // AND / OR of the keys matching the prefix in a pass (two passes' worth: parity)
  uint64_t and_lo[2], or_lo[2];
  int done;
  int gather;                     // done, and the threshold bin's candidates are ranked among themselves
  Cand bin[kGatherMax];           // the threshold bin's candidates when gather
};

// Where block_topk keeps the candidates between passes (dynamic shared
// memory, cap entries each): staged once, compacted, then every pass reads
// them from here. Sources of more than cap entries are re-read each pass.
struct TopkStage {
  double* score;
  long long* flat;
  int* aux;
  int cap;
};
// Dynamic shared bytes for a stage of `cap` and `k` picks (block_topk_carve's layout).
__host__ __device__ constexpr size_t topk_shared_bytes(int cap, int k) {
  return static_cast<size_t>(cap) * (sizeof(double) + sizeof(long long) + sizeof(int)) + static_cast<size_t>(k) * sizeof(Cand) + 16;
}
// Splits `dyn` (topk_shared_bytes(cap, k) bytes) into the stage and the picks.
__device__ inline TopkStage block_topk_carve(void* dyn, int cap, int k, Cand** picks) {
  auto* base = static_cast<unsigned char*>(dyn);
  TopkStage st;
  st.score = reinterpret_cast<double*>(base);
  st.flat = reinterpret_cast<long long*>(base + static_cast<size_t>(cap) * sizeof(double));
  *picks = reinterpret_cast<Cand*>(base + static_cast<size_t>(cap) * (sizeof(double) + sizeof(long long)));
  st.aux = reinterpret_cast<int*>(base + static_cast<size_t>(cap) * (sizeof(double) + sizeof(long long)) + static_cast<size_t>(k) * sizeof(Cand));
  st.cap = cap;
  return st;
}

// Radix digits block_topk may need for candidates whose flat index is below
// 2^flat_bits: 8 over the score, then enough over the flat index.
__host__ __device__ constexpr int topk_radix_passes(int flat_bits) { return 64 / kRadixBits + (flat_bits + kRadixBits - 1) / kRadixBits; }

// Digit `pass` of the 128-bit key: 8 over the score (hi), then lo_digits
// over the flat index (lo), most significant first.
__device__ __forceinline__ void radix_digit(int pass, int lo_digits, bool* in_hi, int* shift) {
  *in_hi = pass < 64 / kRadixBits;
  *shift = *in_hi ? 64 - kRadixBits * (pass + 1) : kRadixBits * (lo_digits - 1 - (pass - 64 / kRadixBits));
}

// One radix pass's decision (all threads): in the histogram of digit `pass`
// among candidates matching the prefix, the bin holding the need-th best.
// The following digits that every matching candidate shares (from the pass's
// AND / OR of their keys, buffer buf) are fixed at once: the threshold bin's
// candidates share them too. Three barriers in all with the caller's two.
__device__ inline void topk_pick_digit(TopkShared& sh, int pass, int passes, int lo_digits, int buf) {
  const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  const unsigned h = sh.hist[kRadixBins - 1 - t];  // thread t holds bin 255 - t: the best digits first
  const unsigned need = sh.need;
  unsigned incl = h;
  for (unsigned o = 1; o < 32; o <<= 1) {
    const unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) sh.warp_sum[warp] = incl;
  __syncthreads();
  unsigned total = 0;
  for (unsigned w = 0; w < kSelectThreads / 32; ++w) {
    if (w < warp) incl += sh.warp_sum[w];
    total += sh.warp_sum[w];
  }
  const unsigned excl = incl - h;
  if (total <= need) {  // every matching candidate is taken
    if (t == 0) {
      sh.need = total;
      sh.done = 1;
    }
  } else if (excl < need && incl >= need) {  // exactly one thread: the threshold's digit
    bool in_hi;
    int shift;
    radix_digit(pass, lo_digits, &in_hi, &shift);
    const uint64_t digit = kRadixBins - 1 - t, bits = uint64_t{kRadixBins - 1} << shift;
    if (in_hi) {
      sh.prefix_hi |= digit << shift;
      sh.mask_hi |= bits;
    } else {
      sh.prefix_lo |= digit << shift;
      sh.mask_lo |= bits;
    }
    sh.need = need - excl;
    int next = pass + 1;
    const uint64_t same_hi = ~(sh.and_hi[buf] ^ sh.or_hi[buf]), same_lo = ~(sh.and_lo[buf] ^ sh.or_lo[buf]);
    for (; next < passes; ++next) {  // digits all matching candidates share
      bool nh;
      int ns;
      radix_digit(next, lo_digits, &nh, &ns);
      const uint64_t nb = uint64_t{kRadixBins - 1} << ns;
      if (((nh ? same_hi : same_lo) & nb) != nb) break;
      if (nh) {
        sh.prefix_hi |= sh.and_hi[buf] & nb;
        sh.mask_hi |= nb;
      } else {
        sh.prefix_lo |= sh.and_lo[buf] & nb;
        sh.mask_lo |= nb;
      }
    }
    sh.next_pass = next;
    if (h == need - excl || next >= passes) {
      sh.done = 1;  // the whole bin is taken (or the key is resolved): no finer digit needed
    } else if (h <= kGatherMax) {
      sh.done = 1;  // few enough to rank the bin's candidates among themselves
      sh.gather = 1;
    }
  }
}

// counter[bin] += 1 for each lane with `ok`, one atomic per warp when every
// such lane has the same bin (the common case while the threshold's leading
// digits are shared), else one per lane. Every lane of the warp calls it.
__device__ __forceinline__ void warp_count(unsigned* counter, unsigned bin, bool ok) {
  const unsigned lanes = __ballot_sync(0xffffffffu, ok);
  if (lanes == 0) return;
  const int first = __ffs(static_cast<int>(lanes)) - 1;
  const unsigned bin0 = __shfl_sync(0xffffffffu, bin, first);
  if (__all_sync(0xffffffffu, !ok || bin == bin0)) {
    if (static_cast<int>(threadIdx.x & 31u) == first) atomicAdd(&counter[bin0], static_cast<unsigned>(__popc(lanes)));
  } else if (ok) {
    atomicAdd(&counter[bin], 1u);
  }
}

// block_topk's first step (thread 0): no digit resolved, k still needed, no
// candidate staged, taken or gathered.
__device__ __forceinline__ void topk_reset(TopkShared& sh, int k) {
  if (threadIdx.x == 0) {
    sh.prefix_hi = sh.prefix_lo = sh.mask_hi = sh.mask_lo = 0;
    sh.need = static_cast<unsigned>(k);
    sh.taken = 0;
    sh.staged = 0;
    sh.gathered = 0;
    sh.next_pass = 0;
    sh.done = 0;
    sh.gather = 0;
  }
}

// Reads the candidates src(i, c), i < n, once into the stage, compacted (the
// warp votes place each warp's candidates together); sh.staged counts them.
template <typename Source>
__device__ __forceinline__ void topk_stage(const Source& src, int n, TopkShared& sh, const TopkStage& stage) {
  const unsigned t = threadIdx.x;
  constexpr int kBatch = 4;  // loads issued together before the warp votes that place them
  for (int base = 0; base < n; base += static_cast<int>(kSelectThreads) * kBatch) {
    Cand c[kBatch];
    bool ok[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * static_cast<int>(kSelectThreads) + static_cast<int>(t);
      ok[u] = i < n && src(i, c[u]) && c[u].score == c[u].score;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const unsigned lanes = __ballot_sync(0xffffffffu, ok[u]);
      const int first = lanes ? __ffs(static_cast<int>(lanes)) - 1 : 0;
      unsigned at = 0;
      if (lanes && static_cast<int>(t & 31u) == first) at = atomicAdd(&sh.staged, static_cast<unsigned>(__popc(lanes)));
      at = __shfl_sync(0xffffffffu, at, first);
      if (ok[u]) {
        const unsigned slot = at + static_cast<unsigned>(__popc(lanes & ((1u << (t & 31u)) - 1u)));
        stage.score[slot] = c[u].score;
        stage.flat[slot] = c[u].flat;
        stage.aux[slot] = c[u].aux;
      }
    }
  }
}

// Calls f(ok, c) for every candidate (the stage's first count when staged,
// else src's), all lanes in step (f may use warp collectives).
template <typename Source, typename F>
__device__ __forceinline__ void topk_visit(const Source& src, const TopkStage& stage, bool staged, int count, const F& f) {
  const unsigned t = threadIdx.x;
  for (int base = 0; base < count; base += static_cast<int>(kSelectThreads)) {
    const int i = base + static_cast<int>(t);
    Cand c{0.0, -1, 0};
    bool ok = i < count;
    if (ok && staged) c = Cand{stage.score[i], stage.flat[i], stage.aux[i]};
    else if (ok) ok = src(i, c) && c.score == c.score;
    f(ok, c);
  }
}

// A radix pass's clean slate: its histogram cleared, its AND / OR buffer buf
// set to the identities.
__device__ __forceinline__ void topk_pass_clear(TopkShared& sh, int buf) {
  const unsigned t = threadIdx.x;
  sh.hist[t] = 0;
  if (t == 0) {
    sh.and_hi[buf] = sh.and_lo[buf] = ~uint64_t{0};
    sh.or_hi[buf] = sh.or_lo[buf] = 0;
  }
}

// A radix pass's counts: the histogram of digit `pass` over the candidates
// that match the threshold's digits so far, and the AND / OR of their keys
// (buffer buf), reduced per warp, then one atomic per warp and word.
template <typename Source>
__device__ __forceinline__ void topk_pass_count(const Source& src, const TopkStage& stage, bool staged, int count, int pass, int lo_digits,
                                                int buf, TopkShared& sh) {
  const unsigned t = threadIdx.x;
  bool in_hi;
  int shift;
  radix_digit(pass, lo_digits, &in_hi, &shift);
  const uint64_t phi = sh.prefix_hi, plo = sh.prefix_lo, mhi = sh.mask_hi, mlo = sh.mask_lo;
  uint64_t a_hi = ~uint64_t{0}, o_hi = 0, a_lo = ~uint64_t{0}, o_lo = 0;
  topk_visit(src, stage, staged, count, [&](bool ok, const Cand& c) {
    const uint64_t hi = score_key(c.score), lo = flat_key(c.flat);
    ok = ok && (hi & mhi) == phi && (lo & mlo) == plo;
    if (ok) {
      a_hi &= hi;
      o_hi |= hi;
      a_lo &= lo;
      o_lo |= lo;
    }
    warp_count(sh.hist, static_cast<unsigned>(((in_hi ? hi : lo) >> shift) & (kRadixBins - 1)), ok);
  });
  for (int o = 16; o > 0; o >>= 1) {
    a_hi &= __shfl_xor_sync(0xffffffffu, a_hi, o);
    o_hi |= __shfl_xor_sync(0xffffffffu, o_hi, o);
    a_lo &= __shfl_xor_sync(0xffffffffu, a_lo, o);
    o_lo |= __shfl_xor_sync(0xffffffffu, o_lo, o);
  }
  if ((t & 31u) == 0) {
    atomicAnd(reinterpret_cast<unsigned long long*>(&sh.and_hi[buf]), static_cast<unsigned long long>(a_hi));
    atomicOr(reinterpret_cast<unsigned long long*>(&sh.or_hi[buf]), static_cast<unsigned long long>(o_hi));
    atomicAnd(reinterpret_cast<unsigned long long*>(&sh.and_lo[buf]), static_cast<unsigned long long>(a_lo));
    atomicOr(reinterpret_cast<unsigned long long*>(&sh.or_lo[buf]), static_cast<unsigned long long>(o_lo));
  }
}

// The candidates above the final threshold go to s_pick (the first k taken);
// with gather, those in the threshold bin go to sh.bin instead.
template <typename Source>
__device__ __forceinline__ void topk_collect(const Source& src, const TopkStage& stage, bool staged, int count, int k, bool gather,
                                             TopkShared& sh, Cand* s_pick) {
  const uint64_t phi = sh.prefix_hi, plo = sh.prefix_lo, mhi = sh.mask_hi, mlo = sh.mask_lo;
  topk_visit(src, stage, staged, count, [&](bool ok, const Cand& c) {
    if (!ok) return;
    const uint64_t hi = score_key(c.score) & mhi, lo = flat_key(c.flat) & mlo;
    if (hi < phi || (hi == phi && lo < plo)) return;
    if (gather && hi == phi && lo == plo) {  // in the threshold bin: ranked below
      const unsigned g = atomicAdd(&sh.gathered, 1u);
      if (g < kGatherMax) sh.bin[g] = c;
      return;
    }
    const unsigned slot = atomicAdd(&sh.taken, 1u);
    if (slot < static_cast<unsigned>(k)) s_pick[slot] = c;
  });
}

// The gathered threshold bin's candidates that fewer than sh.need others of
// the bin beat go to s_pick too.
__device__ __forceinline__ void topk_take_from_bin(int k, TopkShared& sh, Cand* s_pick) {
  const unsigned t = threadIdx.x;
  const int in_bin = static_cast<int>(sh.gathered < kGatherMax ? sh.gathered : kGatherMax);
  const int need = static_cast<int>(sh.need);
  for (int i = static_cast<int>(t); i < in_bin; i += kSelectThreads) {
    const Cand me = sh.bin[i];
    int beaten_by = 0;
    for (int j = 0; j < in_bin; ++j) beaten_by += better(sh.bin[j], me) ? 1 : 0;
    if (beaten_by < need) {
      const unsigned slot = atomicAdd(&sh.taken, 1u);
      if (slot < static_cast<unsigned>(k)) s_pick[slot] = me;
    }
  }
}

// Ranks the picks (each pick's rank: the number of picks better than it) and
// emits them, then "none" for the ranks past them; returns the pick count.
template <typename Emit>
__device__ __forceinline__ int topk_emit_ranked(int k, const TopkShared& sh, const Cand* s_pick, const Emit& emit) {
  const unsigned t = threadIdx.x;
  const int picked = static_cast<int>(sh.taken < static_cast<unsigned>(k) ? sh.taken : static_cast<unsigned>(k));
  for (int i = static_cast<int>(t); i < picked; i += kSelectThreads) {
    const Cand me = s_pick[i];
    int rank = 0;
    for (int j = 0; j < picked; ++j) rank += better(s_pick[j], me) ? 1 : 0;
    emit(rank, me);
  }
  for (int r = picked + static_cast<int>(t); r < k; r += kSelectThreads) emit(r, Cand{0.0, -1, 0});
  return picked;
}

// The k best candidates of src(i, c) for i in [0, n) (src returns false for
// "not a candidate"; NaN scores are never candidates), ranked in the total
// order: emit(r, c) for r in [0, k), with "none" (flat -1) past the count,
// which it returns. Every thread of a kSelectThreads block calls it.
//   0. When n <= stage.cap, the candidates are read once and kept, compacted,
//      in the stage (shared memory); else src is read again each pass.
//   1. Radix select over the 128-bit key (score, then flat index), 8 bits a
//      pass, best digits first: each pass histograms the candidates that
//      match the threshold's digits so far and fixes one more digit. It stops
//      as soon as the bin of the threshold holds exactly what is still needed,
//      or at most kGatherMax candidates, after at most
//      topk_radix_passes(flat_bits) passes of 3 barriers.
//   2. The candidates above the threshold bin go to s_pick[k] (shared) in any
//      order, and so does the bin's whole content, or (when it stopped on a
//      small bin) those of its candidates that fewer than `need` others of
//      the bin beat (one more barrier); each pick's rank is the number of
//      picks better than it (k^2 / threads comparisons, one barrier).
// Candidates' flat indices must lie in [0, 2^flat_bits).
template <typename Source, typename Emit>
__device__ int block_topk(const Source& src, int n, int k, int flat_bits, TopkShared& sh, const TopkStage& stage, Cand* s_pick,
                          const Emit& emit) {
  topk_reset(sh, k);
  const bool staged = n <= stage.cap;
  if (staged) {
    __syncthreads();  // the counters are reset
    topk_stage(src, n, sh, stage);
  }
  const int lo_digits = (flat_bits + kRadixBits - 1) / kRadixBits;
  const int passes = topk_radix_passes(flat_bits);
  int count = n;
  for (int it = 0;; ++it) {
    const int buf = it & 1;  // the AND / OR buffer of this pass (the last pass's decision may still read the other)
    topk_pass_clear(sh, buf);
    __syncthreads();  // the histogram is clear, the last pass's decision (and the stage) visible
    if (it == 0 && staged) count = static_cast<int>(sh.staged);
    if (sh.done) break;
    const int pass = sh.next_pass;
    topk_pass_count(src, stage, staged, count, pass, lo_digits, buf, sh);
    __syncthreads();  // the histogram and the AND / OR are complete
    topk_pick_digit(sh, pass, passes, lo_digits, buf);
  }
  __syncthreads();  // the threshold is final (count was read in the first pass, after the stage was complete)
  const bool gather = sh.gather != 0;
  topk_collect(src, stage, staged, count, k, gather, sh, s_pick);
  if (gather) {
    __syncthreads();  // the bin is gathered
    topk_take_from_bin(k, sh, s_pick);
  }
  __syncthreads();  // every pick is in s_pick
  const int picked = topk_emit_ranked(k, sh, s_pick, emit);
  __syncthreads();  // the stage, s_pick and sh may be reused by the caller's next call
  return picked;
}

// Bits needed for flat indices below `bound` (>= 1).
__host__ __device__ constexpr int flat_bits_below(long long bound) {
  int b = 1;
  while (b < 63 && (1LL << b) < bound) ++b;
  return b;
}

}  // namespace triescope::cuda::detail
