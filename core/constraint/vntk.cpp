#include "core/constraint/vntk.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "core/common/error.h"

namespace triescope {

const char* mask_path_name(MaskPath p) {
  switch (p) {
    case MaskPath::dense: return "dense";
    case MaskPath::sparse: return "sparse";
    case MaskPath::pointer: return "pointer";
    case MaskPath::search: return "search";
    case MaskPath::hash: return "hash";
  }
  return "?";
}

template <class T>
void fill_neg_inf(T* row, int64_t n) {
  // A string store of the -inf pattern from a register (rep stos; ERMSB makes
  // it memset's fast path). Not a copy from a block of -inf values: glibc's
  // copy of such a block ran 2-5x slower whenever the row sat 16 bytes past
  // the block modulo 4096 (4K aliasing in rep movsb on AMD EPYC, glibc 2.36;
  // bench_constraint alias/* keeps the case). A plain std::fill of floats is
  // a scalar store loop at -O2.
#if defined(__x86_64__) && defined(__GNUC__)
  if (n <= 0) return;
  void* dst = row;
  size_t count = static_cast<size_t>(n);
  if constexpr (sizeof(T) == 4) {
    asm volatile("rep stosl" : "+D"(dst), "+c"(count) : "a"(0xFF800000u) : "memory");
  } else {
    asm volatile("rep stosq" : "+D"(dst), "+c"(count) : "a"(0xFFF0000000000000ull) : "memory");
  }
#else
  for (int64_t i = 0; i < n; ++i) row[i] = -std::numeric_limits<T>::infinity();
#endif
}
template void fill_neg_inf<float>(float*, int64_t);
template void fill_neg_inf<double>(double*, int64_t);

namespace {

// Reads edge e of the speculative slice; past the end it returns 0 (fill mode).
struct StackedEdges {
  const int32_t* data;
  int64_t E;
  int32_t token(int64_t e) const { return e < E ? data[e * 2] : 0; }
  int64_t next(int64_t e) const { return e < E ? data[e * 2 + 1] : 0; }
};
template <class Col>
struct CompactEdges {
  const Col* cols;
  int64_t E;
  int32_t token(int64_t e) const { return e < E ? static_cast<int32_t>(cols[e]) : 0; }
  int64_t next(int64_t e) const { return e < E ? e + 1 : 0; }  // implied: edge e enters state e + 1
};

template <class T, class Edges, class RowPtr>
void vntk_rows(const Edges& edges, const RowPtr* P, int64_t num_rows, int32_t V, int32_t Bt, const int64_t* states, int32_t n,
               T* logprobs, int32_t* cand_tokens, int64_t* cand_next, int32_t* valid) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  std::vector<T> cand_lp(static_cast<size_t>(Bt));
  std::vector<int32_t> cand_tok(static_cast<size_t>(Bt));
  for (int32_t i = 0; i < n; ++i) {
    T* row = logprobs + static_cast<size_t>(i) * static_cast<size_t>(V);
    const int64_t s = states[i];
    // Phase 1: boundary lookup. States outside the rows (leaves, dead beams) read an empty row.
    const int64_t r = (s >= 0 && s < num_rows) ? s : num_rows;
    const int64_t start = static_cast<int64_t>(P[r]);
    const int64_t len = static_cast<int64_t>(P[r + 1]) - start;
    // Phases 2-3: slice B_t entries regardless of the child count, then sanitise (lines 14-16).
    for (int32_t k = 0; k < Bt; ++k) {
      const bool ok = k < len;
      const int32_t tok = edges.token(start + k);
      const int64_t nxt = edges.next(start + k);
      cand_tok[static_cast<size_t>(k)] = ok ? tok : V;
      cand_lp[static_cast<size_t>(k)] = ok ? row[std::min(tok, V - 1)] : kNegInf;
      if (cand_tokens) cand_tokens[static_cast<size_t>(i) * static_cast<size_t>(Bt) + static_cast<size_t>(k)] = ok ? tok : V;
      if (cand_next) cand_next[static_cast<size_t>(i) * static_cast<size_t>(Bt) + static_cast<size_t>(k)] = ok ? nxt : 0;
    }
    // Phase 4: projection. The row becomes -inf, then the valid candidates are
    // scattered back; invalid slots scatter into a dummy column (index |V|).
    fill_neg_inf(row, V);
    T sink;
    for (int32_t k = 0; k < Bt; ++k) {
      const int32_t t = cand_tok[static_cast<size_t>(k)];
      T* dst = t < V ? row + t : &sink;
      *dst = cand_lp[static_cast<size_t>(k)];
    }
    if (valid) valid[i] = static_cast<int32_t>(std::min<int64_t>(len, Bt));
  }
}

template <class T>
int32_t where_bits(const uint64_t* bits, int32_t V, T* row) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  int32_t count = 0;
  for (int32_t w = 0; w * 64 < V; ++w) {
    const uint64_t word = bits[w];
    count += std::popcount(word);
    const int32_t hi = std::min(64, V - w * 64);
    T* r = row + static_cast<size_t>(w) * 64;
    // Work in proportion to the smaller side of each 64-bit word: deep dense
    // rows are mostly empty, the root's mostly full. Same result as the
    // element-wise Where.
    if (word == 0) {
      fill_neg_inf(r, hi);
    } else if (std::popcount(word) <= 32) {
      T keep[64];
      for (uint64_t m = word; m; m &= m - 1) keep[std::countr_zero(m)] = r[std::countr_zero(m)];
      fill_neg_inf(r, hi);
      for (uint64_t m = word; m; m &= m - 1) r[std::countr_zero(m)] = keep[std::countr_zero(m)];
    } else {
      const uint64_t valid_bits = hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
      for (uint64_t m = ~word & valid_bits; m; m &= m - 1) r[std::countr_zero(m)] = kNegInf;
    }
  }
  return count;
}

}  // namespace

template <class T>
void vntk_sparse(const TransitionMatrix& tm, const int64_t* states, int32_t n, int32_t step, T* logprobs, int32_t* cand_tokens,
                 int64_t* cand_next, int32_t* valid) {
  const int32_t Bt = step >= 0 && step < tm.length ? tm.max_branch[static_cast<size_t>(step)] : 0;
  const int64_t E = tm.num_edges();
  if (tm.layout == CsrLayout::stacked) {
    // Every state has a row; a dead state reads the last state's row, a leaf's, which is empty.
    const int64_t last = static_cast<int64_t>(tm.row_ptr.size()) - 2;
    vntk_rows(StackedEdges{tm.edges.data(), E}, tm.row_ptr.data(), last, tm.vocab_size, Bt, states, n, logprobs, cand_tokens,
              cand_next, valid);
  } else {
    const int64_t R = static_cast<int64_t>(tm.row_ptr_compact.size()) - 2;
    if (!tm.cols16.empty())
      vntk_rows(CompactEdges<uint16_t>{tm.cols16.data(), E}, tm.row_ptr_compact.data(), R, tm.vocab_size, Bt, states, n, logprobs,
                cand_tokens, cand_next, valid);
    else
      vntk_rows(CompactEdges<uint32_t>{tm.cols32.data(), E}, tm.row_ptr_compact.data(), R, tm.vocab_size, Bt, states, n, logprobs,
                cand_tokens, cand_next, valid);
  }
}

template <class T>
void dense_lookup(const TransitionMatrix& tm, const int64_t* states, int32_t n, int32_t step, T* logprobs, int32_t* valid) {
  TS_CHECK(step >= 0 && step < tm.dense_levels, "dense lookup: step " << step << " is not a dense level (d = " << tm.dense_levels << ")");
  const int32_t V = tm.vocab_size;
  std::vector<uint64_t> empty(static_cast<size_t>(tm.words_per_row), 0);
  for (int32_t i = 0; i < n; ++i) {
    T* row = logprobs + static_cast<size_t>(i) * static_cast<size_t>(V);
    const int64_t s = states[i];
    const uint64_t* bits = empty.data();
    if (step == 0 && s == 0) bits = tm.dense_mask1.data();
    if (step == 1 && s >= tm.level_start[1] && s < tm.level_start[2])
      bits = tm.dense_mask2.data() + static_cast<size_t>(tm.state_token(s)) * static_cast<size_t>(tm.words_per_row);  // D[t1, :]
    const int32_t c = where_bits(bits, V, row);
    if (valid) valid[i] = c;
  }
}

int64_t static_next_state(const TransitionMatrix& tm, int64_t s, int32_t token, int32_t step) {
  const int32_t V = tm.vocab_size;
  if (s < 0 || s >= tm.num_states() || token < 0 || token >= V) return kDeadState;
  if (step < tm.dense_levels) {
    const uint64_t* bits = nullptr;
    size_t word = 0;
    if (step == 0 && s == 0) {
      bits = tm.dense_mask1.data();
      word = static_cast<size_t>(token) >> 6;
    } else if (step == 1 && s >= tm.level_start[1] && s < tm.level_start[2]) {
      const size_t t1 = static_cast<size_t>(tm.state_token(s));
      bits = tm.dense_mask2.data();
      word = t1 * static_cast<size_t>(tm.words_per_row) + (static_cast<size_t>(token) >> 6);
    } else {
      return kDeadState;
    }
    const uint64_t w = bits[word];
    if (!((w >> (token & 63)) & 1u)) return kDeadState;
    if (tm.layout == CsrLayout::stacked)
      return step == 0 ? tm.dense_states1[static_cast<size_t>(token)]
                       : tm.dense_states2[static_cast<size_t>(tm.state_token(s)) * static_cast<size_t>(V) + static_cast<size_t>(token)];
    // rank: level-l states are numbered in the order of the set bits of D_l
    const uint64_t below = w & ((uint64_t{1} << (token & 63)) - 1);
    const std::vector<uint32_t>& rank = step == 0 ? tm.dense_rank1 : tm.dense_rank2;
    return tm.level_start[static_cast<size_t>(step) + 1] + rank[word] + std::popcount(below);
  }
  const int64_t start = tm.row_begin(s), len = tm.row_end(s) - start;
  const int32_t Bt = step < tm.length ? tm.max_branch[static_cast<size_t>(step)] : 0;
  for (int64_t k = 0; k < std::min<int64_t>(len, Bt); ++k)
    if (tm.edge_token(start + k) == token) return tm.edge_next(start + k);
  return kDeadState;
}

template <class T>
void VntkIndex::mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path) {
  // Alg. 1 lines 9-13: dense lookups for t - 1 < d, VNTK after.
  const bool dense = step < tm_->dense_levels;
  if (dense) dense_lookup(*tm_, states, n, step, lp, valid);
  else vntk_sparse<T>(*tm_, states, n, step, lp, nullptr, nullptr, valid);
  if (path) std::fill(path, path + n, dense ? MaskPath::dense : MaskPath::sparse);
}
// MaskBothPrecisions calls these from every file that builds the index.
template void VntkIndex::mask_impl(const int64_t*, int32_t, int32_t, float*, int32_t*, MaskPath*);
template void VntkIndex::mask_impl(const int64_t*, int32_t, int32_t, double*, int32_t*, MaskPath*);

std::string VntkIndex::name() const {
  return std::string("vntk_") + csr_layout_name(tm_->layout) + "_d" + std::to_string(tm_->dense_levels);
}

nlohmann::json VntkIndex::describe() const {
  nlohmann::json j = tm_->describe();
  j["impl"] = "vntk";
  j["name"] = name();
  return j;
}

void VntkIndex::trace_extra(int64_t state, int32_t step, nlohmann::json& rec) const {
  if (step < tm_->dense_levels || state < 0 || state >= tm_->num_states()) return;
  // The CSR slice the paper's Figure 1e reads: P[s] .. P[s + 1], and the fixed width B_t.
  rec["row"] = {tm_->row_begin(state), tm_->row_end(state)};
  rec["slice"] = step < tm_->length ? tm_->max_branch[static_cast<size_t>(step)] : 0;
}

template void vntk_sparse<float>(const TransitionMatrix&, const int64_t*, int32_t, int32_t, float*, int32_t*, int64_t*, int32_t*);
template void vntk_sparse<double>(const TransitionMatrix&, const int64_t*, int32_t, int32_t, double*, int32_t*, int64_t*, int32_t*);
template void dense_lookup<float>(const TransitionMatrix&, const int64_t*, int32_t, int32_t, float*, int32_t*);
template void dense_lookup<double>(const TransitionMatrix&, const int64_t*, int32_t, int32_t, double*, int32_t*);

}  // namespace triescope
