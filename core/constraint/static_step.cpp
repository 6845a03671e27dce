#include "core/constraint/static_step.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/common/error.h"
#include "core/constraint/vntk.h"
#include "core/select/log_normaliser.h"

namespace triescope {

namespace {

using Clock = std::chrono::steady_clock;
using Candidate = StaticStep::Candidate;

// topk_candidates' order: score descending, then flat index ascending.
struct Better {
  bool operator()(const Candidate& a, const Candidate& b) const { return a.score > b.score || (a.score == b.score && a.flat < b.flat); }
};
constexpr Better better;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Keeps the best k of `c` (all flats distinct, so "best k" is unique), the
// k-th best last.
void keep_best(std::vector<Candidate>& c, int32_t k) {
  if (c.empty()) return;
  const size_t kk = std::min(c.size(), static_cast<size_t>(k));
  std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(kk - 1), c.end(), better);
  c.resize(kk);
}

// Adds the time since t0 to `acc` and restarts t0 (no-op without times).
void lap(StaticStepTimes* times, double StaticStepTimes::*acc, Clock::time_point& t0) {
  if (!times) return;
  times->*acc += seconds_since(t0);
  t0 = Clock::now();
}

// A. Dense levels (Alg. 1 DenseLookup): each beam's allowed bit row (null:
// none) and its count.
void lookup_dense(const TransitionMatrix& tm, const int64_t* states, int32_t n, int32_t step, std::vector<const uint64_t*>& bits_of,
                  std::vector<int32_t>& valid) {
  for (int32_t i = 0; i < n; ++i) {
    const int64_t s = states[i];
    const uint64_t* bits = nullptr;
    if (step == 0 && s == 0) bits = tm.dense_mask1.data();
    if (step == 1 && s >= tm.level_start[1] && s < tm.level_start[2])
      bits = tm.dense_mask2.data() + static_cast<size_t>(tm.state_token(s)) * static_cast<size_t>(tm.words_per_row);
    bits_of[static_cast<size_t>(i)] = bits;
    int32_t c = 0;
    if (bits)
      for (int32_t w = 0; w < tm.words_per_row; ++w) c += std::popcount(bits[w]);
    valid[static_cast<size_t>(i)] = c;
  }
}

// A. Sparse levels: each beam's CSR slice, at most B_t wide (Alg. 2). The
// boundary lookups of all beams are issued before any is used, then the
// slices prefetched, so their cache misses overlap each other and phase B.
void lookup_sparse(const TransitionMatrix& tm, const int64_t* states, int32_t n, int32_t max_branch, std::vector<int64_t>& start,
                   std::vector<int32_t>& slots_of, std::vector<int32_t>& valid) {
  const bool stacked = tm.layout == CsrLayout::stacked;
  // Rows the boundary lookup may read: stacked, every state but the last
  // (a leaf); compact, the states above the leaves. Others read an empty row.
  const int64_t num_rows = stacked ? static_cast<int64_t>(tm.row_ptr.size()) - 2 : static_cast<int64_t>(tm.row_ptr_compact.size()) - 2;
  auto row_of = [&](int64_t s) { return (s >= 0 && s < num_rows) ? s : num_rows; };
  for (int32_t i = 0; i < n; ++i) {
    const int64_t r = row_of(states[i]);
    if (stacked) __builtin_prefetch(tm.row_ptr.data() + r);
    else __builtin_prefetch(tm.row_ptr_compact.data() + r);
  }
  for (int32_t i = 0; i < n; ++i) {
    const int64_t r = row_of(states[i]);
    const int64_t b = stacked ? tm.row_ptr[static_cast<size_t>(r)] : tm.row_ptr_compact[static_cast<size_t>(r)];
    const int64_t e = stacked ? tm.row_ptr[static_cast<size_t>(r) + 1] : tm.row_ptr_compact[static_cast<size_t>(r) + 1];
    const int32_t slots = static_cast<int32_t>(std::min<int64_t>(e - b, max_branch));  // Alg. 2: Range(B_t) < len
    start[static_cast<size_t>(i)] = b;
    slots_of[static_cast<size_t>(i)] = slots;
    valid[static_cast<size_t>(i)] = slots;
    if (slots > 0) {
      if (stacked) __builtin_prefetch(tm.edges.data() + 2 * b);
      else if (!tm.cols16.empty()) __builtin_prefetch(tm.cols16.data() + b);
      else __builtin_prefetch(tm.cols32.data() + b);
    }
  }
}

// C. One group's running top k: candidates scored against the k-th best T
// found so far. Candidates arrive in ascending flat order, so a newcomer
// beats T only with a higher score.
class GroupTopK {
 public:
  GroupTopK(std::vector<Candidate>& cand, int32_t k) : cand_(cand), k_(k), cap_(static_cast<size_t>(std::max(2 * k, k + 64))) { cand_.clear(); }
  bool has_threshold() const { return have_t_; }
  double threshold() const { return t_score_; }
  // A log-prob is <= 0, so a beam whose score is <= T cannot add anything.
  bool beam_cannot_add(double beam_score) const { return have_t_ && !(beam_score > t_score_); }
  void offer(double score, int64_t flat, int64_t ref) {
    if (!have_t_ || score > t_score_) cand_.push_back({score, flat, ref});
  }
  // After a beam: the first k candidates define T at once (so the beams
  // below it are skipped early); later the buffer is cut back to k when it doubles.
  void beam_done() {
    if (cand_.size() >= (have_t_ ? cap_ : static_cast<size_t>(k_))) {
      keep_best(cand_, k_);
      have_t_ = true;
      t_score_ = cand_.back().score;  // nth_element left the k-th best last
    }
  }
  // The best k, best first.
  void finish() {
    keep_best(cand_, k_);
    std::sort(cand_.begin(), cand_.end(), better);
  }

 private:
  std::vector<Candidate>& cand_;
  int32_t k_;
  size_t cap_;
  bool have_t_ = false;
  double t_score_ = 0.0;
};

// B at a dense level: one pass over the row applies the bit row and keeps
// only tokens that can still beat T (tokens[|V|] scratch).
void offer_dense_row(GroupTopK& top, const float* x, int32_t V, double bs, int64_t flat0, const uint64_t* bits, int32_t* tokens,
                     StaticStepTimes* times) {
  // The bound the pass prunes with, loosened by far more than its
  // rounding so no token that can beat T is dropped (survivors are
  // checked exactly by offer()).
  const double t_score = top.threshold();
  const double bound =
      top.has_threshold() ? (t_score - bs) - 1e-12 * (std::abs(t_score) + std::abs(bs)) : -std::numeric_limits<double>::infinity();
  int32_t c = 0;
  const bool timed = times && times->time_dense_passes;
  const auto p0 = timed ? Clock::now() : Clock::time_point();
  const double lse = row_log_normaliser_allowed(x, V, bits, bound, tokens, &c, "static step");
  if (timed) {
    times->dense_pass_s += seconds_since(p0);
    ++times->dense_passes;
  }
  for (int32_t j = 0; j < c; ++j) {
    const int32_t v = tokens[j];
    top.offer(bs + (static_cast<double>(x[v]) - lse), flat0 + v, v);
  }
}

// B at a sparse level: the full normaliser, then the slice's tokens.
void offer_sparse_row(GroupTopK& top, const TransitionMatrix& tm, const float* x, double bs, int64_t flat0, int64_t b, int32_t slots) {
  const double lse = row_log_normaliser(x, tm.vocab_size, "static step");
  for (int32_t j = 0; j < slots; ++j) {
    const int32_t v = tm.edge_token(b + j);
    if (x[v] == -std::numeric_limits<float>::infinity()) continue;  // a log-prob of -inf is masked, as in topk_candidates
    top.offer(bs + (static_cast<double>(x[v]) - lse), flat0 + v, b + j);
  }
}

// D. Group g's winners and their next states (dense: state table or rank;
// sparse: the edge's target).
void write_winners(const TransitionMatrix& tm, const std::vector<Candidate>& cand, const int64_t* states, int32_t g, int32_t k, bool dense,
                   int32_t step, StaticStepResult& out) {
  const size_t o = static_cast<size_t>(g) * static_cast<size_t>(k);
  out.count[static_cast<size_t>(g)] = static_cast<int32_t>(cand.size());
  for (size_t j = 0; j < cand.size(); ++j) {
    const Candidate& c = cand[j];
    out.score[o + j] = c.score;
    out.flat[o + j] = c.flat;
    const int64_t row = c.flat / tm.vocab_size;
    out.next[o + j] = dense ? static_next_state(tm, states[row], static_cast<int32_t>(c.ref), step) : tm.edge_next(c.ref);
  }
}

}  // namespace

void StaticStep::run(const float* logits, const int64_t* states, const double* beam_scores, int32_t n, int32_t groups, int32_t k,
                     int32_t step, StaticStepResult& out, StaticStepTimes* times) {
  rows_.resize(static_cast<size_t>(std::max(n, 0)));
  for (int32_t i = 0; i < n; ++i) rows_[static_cast<size_t>(i)] = logits + static_cast<size_t>(i) * static_cast<size_t>(tm_->vocab_size);
  run(rows_.data(), states, beam_scores, n, groups, k, step, out, times);
}

void StaticStep::run(const float* const* rows, const int64_t* states, const double* beam_scores, int32_t n, int32_t groups, int32_t k,
                     int32_t step, StaticStepResult& out, StaticStepTimes* times) {
  const TransitionMatrix& tm = *tm_;
  const int32_t V = tm.vocab_size;
  TS_CHECK(n >= 1 && groups >= 1 && n % groups == 0, "static step: " << n << " rows do not split into " << groups << " groups");
  TS_CHECK(k >= 1, "static step: k = " << k << " (must be >= 1)");
  TS_CHECK(step >= 0, "static step: step " << step << " is negative");
  const int32_t M = n / groups;
  const size_t gk = static_cast<size_t>(groups) * static_cast<size_t>(k);
  out.groups = groups;
  out.k = k;
  out.count.assign(static_cast<size_t>(groups), 0);
  out.score.assign(gk, 0.0);
  out.flat.assign(gk, -1);
  out.next.assign(gk, -1);
  out.valid.assign(static_cast<size_t>(n), 0);
  const bool dense = step < tm.dense_levels;
  auto t0 = Clock::now();

  // A. Each beam's candidates: a dense bit row, or a CSR slice.
  start_.assign(static_cast<size_t>(n), 0);
  slots_.assign(static_cast<size_t>(n), 0);
  bits_.assign(static_cast<size_t>(n), nullptr);
  if (dense) lookup_dense(tm, states, n, step, bits_, out.valid);
  else lookup_sparse(tm, states, n, step < tm.length ? tm.max_branch[static_cast<size_t>(step)] : 0, start_, slots_, out.valid);
  lap(times, &StaticStepTimes::constraint_s, t0);

  // B + C, per group: one pass per beam over its logits, its candidates
  // scored against the group's running k-th best T; a beam whose score is
  // <= T is not read at all.
  tokens_.resize(static_cast<size_t>(V));
  for (int32_t g = 0; g < groups; ++g) {
    GroupTopK top(cand_, k);
    for (int32_t i = g * M; i < (g + 1) * M; ++i) {
      const double bs = beam_scores[i];
      if (top.beam_cannot_add(bs)) continue;
      const int64_t flat0 = int64_t{i} * V;
      if (dense) {
        const uint64_t* bits = bits_[static_cast<size_t>(i)];
        if (!bits) continue;
        offer_dense_row(top, rows[i], V, bs, flat0, bits, tokens_.data(), times);
      } else {
        const int32_t slots = slots_[static_cast<size_t>(i)];
        if (slots <= 0) continue;
        offer_sparse_row(top, tm, rows[i], bs, flat0, start_[static_cast<size_t>(i)], slots);
      }
      top.beam_done();
    }
    top.finish();
    lap(times, &StaticStepTimes::rank_s, t0);
    write_winners(tm, cand_, states, g, k, dense, step, out);
    lap(times, &StaticStepTimes::constraint_s, t0);
  }
}

}  // namespace triescope
