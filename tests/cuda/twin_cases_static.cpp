// Twin cases of the STATIC kernels (docs/static.md):
//  - cuda/static/static_mask.cu through cuda::StaticIndexCuda (the cuda
//    backend's index) against core's VntkIndex: masked rows bit for bit,
//    valid counts, paths, the rows read recorded in traces, next states.
//    Host twin: the kernel's row algorithm run on the host
//    (VerifyExec::host_twin); device: the masking kernel.
//  - cuda/static/static_step.cu (the fused step, cuda::StaticStepCuda)
//    against its CPU twin StaticStep (core/constraint/static_step.h) and the
//    full-vocabulary projection (log_softmax_row + dense_lookup /
//    vntk_sparse). Host twin: the kernel's index arithmetic
//    (cuda/static/static_step_index.h) composed the way static_row_kernel and
//    static_merge_kernel compose it, over host copies of the arrays.
// Sizes cover one-beam groups, dead and out-of-range states (empty rows), a
// step past the last level (everything masked), dense (t < d) and sparse
// levels, both CSR layouts, |V| from 5 to 40000 and -inf logits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/constraint/static_step.h"
#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"
#include "core/select/log_normaliser.h"
#include "core/select/topk_candidates.h"
#include "cuda/static/static_constraint_cuda.h"
#include "cuda/static/static_constraint_index.h"
#include "cuda/static/static_step_index.h"
#include "device_util.h"
#include "test_util.h"
#include "twin_cases.h"

namespace triescope::testing {
namespace {

CsrLayout layout_of(const TwinPoint& pt) { return pt.shape.at(2) ? CsrLayout::compact : CsrLayout::stacked; }
size_t at(int64_t i) { return static_cast<size_t>(i); }

// ---------------------------------------------------------------------------
// static_mask.cu: cuda::StaticIndexCuda vs VntkIndex

struct IndexIn {
  std::shared_ptr<const ConstraintSet> set;
  std::shared_ptr<VntkIndex> cpu;  // its matrix is the one StaticIndexCuda runs on
  bool f32 = false;                      // mask float rows (else double)
  int32_t n = 0;
  std::vector<std::vector<int64_t>> states;              // [L + 1][n]; step L: past the last level
  std::vector<std::vector<double>> lp;                   // [L + 1][n x V]; lp[2] is NaN (copied, never interpreted)
  std::vector<std::vector<std::vector<int32_t>>> probe;  // [L + 1][n] random tokens whose next state is asked (|V| > 300)
};
struct IndexStep {
  std::vector<unsigned char> rows;  // the masked rows' bytes
  std::vector<int32_t> valid;       // [n]
  std::vector<MaskPath> path;       // [n]
  std::vector<nlohmann::json> extra;          // [n] trace_extra: the rows read
  std::vector<int64_t> next;        // next states of the asked tokens, row by row
};
struct IndexOut {
  std::string describe;
  std::vector<IndexStep> steps;
  int64_t unread_next = 0;  // next_state(0, item 0's first token, 0) after the masks, asked twice
  int64_t unread_again = 0;
  // StaticIndexCuda only:
  int64_t fallbacks_after_masks = 0, fallbacks = 0, kernel_runs_added = 0;
};

// Every token (|V| <= 300, and -1 and |V|), or the probes and the allowed ones.
std::vector<int32_t> asked_tokens(const IndexIn& in, int32_t t, int32_t i, const std::vector<double>& masked_row) {
  const int32_t V = in.cpu->vocab_size();
  std::vector<int32_t> toks;
  if (V <= 300) {
    for (int32_t v = -1; v <= V; ++v) toks.push_back(v);
    return toks;
  }
  toks = in.probe[at(t)][at(i)];
  for (int32_t v = 0; v < V; ++v)
    if (!std::isinf(masked_row[at(v)])) toks.push_back(v);
  return toks;
}

template <class T>
IndexStep index_step(ConstraintIndex& idx, const IndexIn& in, int32_t t, int32_t unwritten) {
  const std::vector<int64_t>& st = in.states[at(t)];
  const auto V = at(in.cpu->vocab_size());
  std::vector<T> lp(in.lp[at(t)].begin(), in.lp[at(t)].end());
  IndexStep o;
  o.valid.assign(at(in.n), unwritten);
  o.path.resize(at(in.n));
  idx.mask(st.data(), in.n, t, lp.data(), o.valid.data(), o.path.data());
  o.rows.resize(lp.size() * sizeof(T));
  std::memcpy(o.rows.data(), lp.data(), o.rows.size());
  for (int32_t i = 0; i < in.n; ++i) {
    nlohmann::json e = nlohmann::json::object();
    idx.trace_extra(st[at(i)], t, e);
    o.extra.push_back(std::move(e));
    const std::vector<double> row(lp.begin() + static_cast<std::ptrdiff_t>(at(i) * V), lp.begin() + static_cast<std::ptrdiff_t>(at(i + 1) * V));
    for (const int32_t v : asked_tokens(in, t, i, row)) o.next.push_back(idx.next_state(st[at(i)], v, t));
  }
  return o;
}

IndexOut index_masks(ConstraintIndex& idx, const IndexIn& in, int32_t unwritten) {
  IndexOut o;
  o.describe = idx.describe().dump();
  for (int32_t t = 0; t < static_cast<int32_t>(in.states.size()); ++t)
    o.steps.push_back(in.f32 ? index_step<float>(idx, in, t, unwritten) : index_step<double>(idx, in, t, unwritten));
  return o;
}

// A (state, step) the last mask did not read.
void index_unread(const ConstraintIndex& idx, const IndexIn& in, IndexOut& o) {
  const int32_t tok = in.set->item(0)[0];
  o.unread_next = idx.next_state(0, tok, 0);
  o.unread_again = idx.next_state(0, tok, 0);
}

IndexOut index_on_cuda(const IndexIn& in, cuda::VerifyExec exec) {
  cuda::StaticIndexCuda dev(in.cpu, exec);
  IndexOut o = index_masks(dev, in, -9);
  o.fallbacks_after_masks = dev.fallback_runs();
  const int64_t before = dev.kernel_runs();
  index_unread(dev, in, o);
  o.fallbacks = dev.fallback_runs();
  o.kernel_runs_added = dev.kernel_runs() - before;
  return o;
}

IndexIn random_index_in(std::mt19937_64& rng, const TwinPoint& pt) {
  const int32_t V = dim(pt, 0), d = dim(pt, 1);
  IndexIn in;
  in.f32 = pt.variant % 2 == 1;
  const int32_t L = std::uniform_int_distribution<int32_t>(std::max(3, d + 1), 5)(rng);
  const int64_t items = random_item_count(rng, V >= 2048 ? 4000 : 700, V, L);
  in.set = std::make_shared<const ConstraintSet>(constraint_set_random(items, L, V, rng()));
  in.cpu = std::make_shared<VntkIndex>(std::make_shared<const TransitionMatrix>(TransitionMatrix::build(*in.set, {d, layout_of(pt)})));
  in.n = std::uniform_int_distribution<int32_t>(1, 12)(rng);
  std::normal_distribution<double> g(-6.0, 3.0);
  for (int32_t t = 0; t <= L; ++t) {
    in.states.push_back(random_static_states(*in.set, in.cpu->matrix(), in.n, t, rng, true));
    std::vector<double> lp(at(in.n) * at(V));
    for (auto& x : lp) x = g(rng);
    if (V > 3) lp[2] = std::numeric_limits<double>::quiet_NaN();
    in.lp.push_back(std::move(lp));
    std::vector<std::vector<int32_t>> probe(at(in.n));
    for (auto& p : probe)
      for (int32_t k = 0; k < 64; ++k) p.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(V)));
    in.probe.push_back(std::move(probe));
  }
  return in;
}

std::vector<std::vector<int64_t>> index_shapes() {
  std::vector<std::vector<int64_t>> shapes;  // |V|, d, layout (0 stacked, 1 compact)
  for (const int64_t V : {5, 40, 300, 2048, 40000})
    for (const int64_t d : {0, 1, 2})
      for (const int64_t layout : {0, 1})
        if (!(d == 2 && V > 4096)) shapes.push_back({V, d, layout});  // d = 2 needs |V|^2 dense tables (App. B): 6.4 GB stacked at 40000
  return shapes;
}

[[maybe_unused]] const bool static_index = twin_register(TwinSpec<IndexIn, IndexOut>{
    .name = "StaticIndexCuda masks, valid counts, rows read and next states equal VntkIndex",
    .kernel = "cuda/static/static_mask.cu",
    .tags = "[cuda][constraint]",
    .shapes = index_shapes(),
    .host_variants = 2,  // even: double rows, odd: float rows
    .device_variants = 4,
    .inputs = random_index_in,
    .cpu =
        [](const IndexIn& in) {
          IndexOut o = index_masks(*in.cpu, in, -7);
          index_unread(*in.cpu, in, o);
          return o;
        },
    .host_twin = [](const IndexIn& in, int32_t) { return index_on_cuda(in, cuda::VerifyExec::host_twin); },
    .device = [](const IndexIn& in) { return index_on_cuda(in, cuda::VerifyExec::device); },
    .compare =
        [](const TwinPoint&, const IndexIn& in, const IndexOut& want, const IndexOut& got) {
          CAPTURE(in.f32, in.n, in.set->size(), in.cpu->length());
          REQUIRE(got.describe == want.describe);
          REQUIRE(got.steps.size() == want.steps.size());
          for (size_t t = 0; t < want.steps.size(); ++t) {
            CAPTURE(t, in.states[t]);
            REQUIRE(got.steps[t].rows == want.steps[t].rows);  // bit for bit, NaN included
            REQUIRE(got.steps[t].valid == want.steps[t].valid);
            REQUIRE(got.steps[t].path == want.steps[t].path);
            REQUIRE(got.steps[t].extra == want.steps[t].extra);
            REQUIRE(got.steps[t].next == want.steps[t].next);
          }
          // The masks' rows answer every next state asked of them; an unread
          // (state, step) goes through the kernel alone, one run per lookup.
          CHECK(got.fallbacks_after_masks == 0);
          CHECK(got.unread_next == want.unread_next);
          CHECK(got.unread_again == want.unread_again);
          CHECK(got.unread_next >= 1);
          CHECK(got.fallbacks == 2);
          CHECK(got.kernel_runs_added == 2);
        },
});

// ---------------------------------------------------------------------------
// static_step.cu: cuda::StaticStepCuda vs StaticStep

struct StepIn {
  std::shared_ptr<const ConstraintSet> set;
  std::shared_ptr<const TransitionMatrix> tm;
  int32_t groups = 1, M = 1, k = 1;
  bool graph = false;                        // device: one CUDA graph replayed for every step
  std::vector<float> logits;                 // [n x V], some -inf (a model's own mask)
  std::vector<double> scores;                // [n] beam scores
  std::vector<std::vector<int64_t>> states;  // [L][n]
  int32_t n() const { return groups * M; }
};
struct StepAt {
  std::vector<int32_t> valid;    // [n]
  std::vector<double> masked;    // [n x V] the projected log-probs
  std::vector<int32_t> count;    // [groups]
  std::vector<double> score;     // [groups x k]; 0 past count
  std::vector<int64_t> flat;     // [groups x k]; -1 past count
  std::vector<int64_t> next;     // [groups x k]; -1 past count
  std::vector<int32_t> slot_tok;   // host: [n x B_t] sanitised tokens at a sparse level (|V| when invalid)
  std::vector<int64_t> slot_next;  // host: [n x B_t] sanitised next states (0 when invalid)
  std::vector<int64_t> allowed_next;  // host: the next state of every allowed token, row by row
  std::vector<int64_t> states;        // device: the states after the step (not advanced)
  int32_t step = -1;                  // device: the step index after the step
};
struct StepOut {
  std::vector<StepAt> steps;
  int64_t matrix_bytes = 0;  // device: the uploaded matrix; CPU: TransitionMatrix::memory().total()
  int32_t graphs = 0;        // device: graphs captured
};

bool close(double a, double b) { return std::abs(a - b) <= 1e-12 * (1.0 + std::abs(b)); }

std::vector<double> log_softmax_all(const StepIn& in) {
  const auto V = at(in.tm->vocab_size);
  std::vector<double> lp(in.logits.size());
  for (size_t i = 0; i < at(in.n()); ++i) log_softmax_row(in.logits.data() + i * V, static_cast<int32_t>(V), lp.data() + i * V);
  return lp;
}

StepOut step_cpu(const StepIn& in) {
  const TransitionMatrix& tm = *in.tm;
  const int32_t n = in.n(), V = tm.vocab_size;
  StepOut o;
  o.matrix_bytes = tm.memory().total();
  o.graphs = in.graph ? 1 : 0;
  StaticStep step(tm);
  for (int32_t t = 0; t < static_cast<int32_t>(in.states.size()); ++t) {
    const std::vector<int64_t>& st = in.states[at(t)];
    StepAt a;
    a.masked = log_softmax_all(in);
    std::vector<int32_t> valid(at(n));
    const int32_t Bt = tm.max_branch[at(t)];
    if (t < tm.dense_levels) {
      dense_lookup(tm, st.data(), n, t, a.masked.data(), valid.data());
    } else {
      a.slot_tok.resize(at(n) * at(Bt));
      a.slot_next.resize(at(n) * at(Bt));
      vntk_sparse<double>(tm, st.data(), n, t, a.masked.data(), a.slot_tok.data(), a.slot_next.data(), valid.data());
    }
    for (int32_t i = 0; i < n; ++i)
      for (int32_t v = 0; v < V; ++v)
        if (!std::isinf(a.masked[at(i) * at(V) + at(v)])) a.allowed_next.push_back(static_next_state(tm, st[at(i)], v, t));
    StaticStepResult r;
    step.run(in.logits.data(), st.data(), in.scores.data(), n, in.groups, in.k, t, r);
    a.valid = r.valid;
    a.count = r.count;
    a.score = r.score;
    a.flat = r.flat;
    a.next = r.next;
    a.states = st;
    a.step = t;
    o.steps.push_back(std::move(a));
  }
  return o;
}

// static_row_kernel for one row, sequentially: the projection into `row`
// (the row's log-probs, in place), the valid count, the sanitised slice and
// the row's best min(k, count) with their next states, best first.
struct RowOut {
  int32_t count = 0;
  std::vector<int32_t> slot_tok;
  std::vector<int64_t> slot_next;
  std::vector<ScoredCandidate> best;
  std::vector<int64_t> best_next;
};
RowOut row_step(const cuda::StaticMatrixView& m, int64_t s, int32_t step, int32_t r, double bs, int32_t k, double* row) {
  using namespace triescope::cuda;
  RowOut o;
  const int32_t V = m.vocab;
  const bool live = step >= 0 && step < m.length && s >= -1 && s < m.num_states;
  const bool dense = live && step < m.dense_levels, sparse = live && !dense;
  const uint64_t* bits = dense ? step_dense_row(m, s, step) : nullptr;
  int64_t start = 0, len = 0;
  int32_t Bt = 0;
  if (sparse) {
    const int64_t rr = step_row(m, s);
    start = step_row_begin(m, rr);
    len = step_row_end(m, rr) - start;
    Bt = m.max_branch[step];
  }
  const int32_t slots = static_cast<int32_t>(std::min<int64_t>(len, Bt));
  o.count = sparse ? slots : 0;
  if (bits) {
    o.count = 0;
    for (int32_t w = 0; w < m.words_per_row; ++w) o.count += popcount64(bits[w]);
  }
  const std::vector<double> lp(row, row + V);
  for (int32_t v = 0; v < V; ++v) row[v] = (bits && step_bit(bits, v)) ? lp[at(v)] : -std::numeric_limits<double>::infinity();
  for (int32_t kk = 0; kk < Bt; ++kk) {
    const int32_t tok = kk < len ? step_edge_token(m, start + kk) : V;
    o.slot_tok.push_back(tok);
    o.slot_next.push_back(kk < len ? step_edge_next(m, start + kk) : 0);
    if (tok < V) row[tok] = lp[at(tok)];
  }
  // Candidates with their payload (token or slot); a -inf log-prob is no
  // candidate (as in topk_candidates); the best min(k, count) in topk order.
  struct C {
    ScoredCandidate c;
    int32_t aux;
  };
  std::vector<C> cands;
  const auto add = [&](int32_t tok, int32_t aux) {
    if (!std::isinf(lp[at(tok)])) cands.push_back({{bs + lp[at(tok)], int64_t{r} * V + tok}, aux});
  };
  if (bits) {
    for (int32_t v = 0; v < V; ++v)
      if (step_bit(bits, v)) add(v, v);
  } else {
    for (int32_t kk = 0; kk < slots; ++kk) add(step_edge_token(m, start + kk), kk);
  }
  std::sort(cands.begin(), cands.end(), [](const C& a, const C& b) { return a.c.score > b.c.score || (a.c.score == b.c.score && a.c.flat < b.c.flat); });
  for (size_t j = 0; j < std::min(at(k), cands.size()); ++j) {
    o.best.push_back(cands[j].c);
    o.best_next.push_back(bits ? step_dense_next(m, s, step, cands[j].aux) : step_edge_next(m, start + cands[j].aux));
  }
  return o;
}

// static_merge_kernel for one group: a k-way merge of its rows' ordered
// winners (a cursor per row, the best head each round), padded as the kernel pads.
void group_merge(const std::vector<RowOut>& rows, int32_t g, int32_t M, int32_t k, StepAt& a) {
  std::vector<size_t> cursor(at(M), 0);
  const auto better = [](const ScoredCandidate& x, const ScoredCandidate& y) { return x.score > y.score || (x.score == y.score && x.flat < y.flat); };
  int32_t count = 0;
  for (int32_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int32_t i = 0; i < M; ++i) {
      const RowOut& ro = rows[at(g * M + i)];
      if (cursor[at(i)] >= ro.best.size()) continue;  // the kernel's -1 padding
      if (best < 0 || better(ro.best[cursor[at(i)]], rows[at(g * M + best)].best[cursor[at(best)]])) best = i;
    }
    if (best < 0) break;
    const RowOut& ro = rows[at(g * M + best)];
    const size_t o = at(g) * at(k) + at(j);
    a.score[o] = ro.best[cursor[at(best)]].score;
    a.flat[o] = ro.best[cursor[at(best)]].flat;
    a.next[o] = ro.best_next[cursor[at(best)]];
    ++cursor[at(best)];
    ++count;
  }
  a.count[at(g)] = count;
}

StepOut step_host_twin(const StepIn& in) {
  const cuda::StaticMatrixView m = cuda::static_matrix_host_view(*in.tm);
  const int32_t n = in.n(), V = m.vocab;
  StepOut o;
  for (int32_t t = 0; t < static_cast<int32_t>(in.states.size()); ++t) {
    const std::vector<int64_t>& st = in.states[at(t)];
    StepAt a;
    a.masked = log_softmax_all(in);
    std::vector<RowOut> rows;
    for (int32_t i = 0; i < n; ++i) rows.push_back(row_step(m, st[at(i)], t, i, in.scores[at(i)], in.k, a.masked.data() + at(i) * at(V)));
    for (int32_t i = 0; i < n; ++i) {
      const RowOut& ro = rows[at(i)];
      a.valid.push_back(ro.count);
      if (t >= m.dense_levels) {
        a.slot_tok.insert(a.slot_tok.end(), ro.slot_tok.begin(), ro.slot_tok.end());
        a.slot_next.insert(a.slot_next.end(), ro.slot_next.begin(), ro.slot_next.end());
      }
      // Every allowed token's next state, through the kernel's arithmetic.
      for (int32_t v = 0; v < V; ++v) {
        if (std::isinf(a.masked[at(i) * at(V) + at(v)])) continue;
        int64_t next = kDeadState;
        if (t < m.dense_levels) next = cuda::step_dense_next(m, st[at(i)], t, v);
        else
          for (size_t kk = 0; kk < ro.slot_tok.size(); ++kk)
            if (ro.slot_tok[kk] == v) next = ro.slot_next[kk];
        a.allowed_next.push_back(next);
      }
    }
    a.count.assign(at(in.groups), 0);
    a.score.assign(at(in.groups) * at(in.k), 0.0);
    a.flat.assign(at(in.groups) * at(in.k), -1);
    a.next.assign(at(in.groups) * at(in.k), -1);
    for (int32_t g = 0; g < in.groups; ++g) group_merge(rows, g, in.M, in.k, a);
    o.steps.push_back(std::move(a));
  }
  return o;
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { TS_CUDA_CHECK(cudaStreamCreate(&s), "test stream"); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

StepOut step_on_device(const StepIn& in) {
  const cuda::DeviceTransitionMatrix dm(*in.tm);
  Stream stream;
  StepOut o;
  o.matrix_bytes = dm.bytes();
  {
    cuda::StaticStepCuda st(dm, in.n(), in.groups, in.k, stream.s);
    const auto d_logits = upload(in.logits);
    for (int32_t t = 0; t < static_cast<int32_t>(in.states.size()); ++t) {
      st.reset(in.states[at(t)], in.scores, t);
      st.poison();
      if (in.graph) st.graph_launch(d_logits.data(), true, false);
      else st.launch(d_logits.data(), true, false);
      st.check("static step twin case");
      cuda::StaticStepHost h = st.download(true);
      StepAt a;
      a.valid = std::move(h.valid);
      a.masked = std::move(h.masked_logprobs);
      a.count = std::move(h.top_count);
      a.score = std::move(h.top_score);
      a.flat = std::move(h.top_flat);
      a.next = std::move(h.top_next);
      a.states = std::move(h.states);
      a.step = h.step;
      o.steps.push_back(std::move(a));
    }
    o.graphs = st.graphs_captured();
  }
  return o;
}

StepIn random_step_in(std::mt19937_64& rng, const TwinPoint& pt) {
  const int32_t V = dim(pt, 0), M = dim(pt, 3), d = dim(pt, 1);
  StepIn in;
  const int32_t L = std::uniform_int_distribution<int32_t>(3, 6)(rng);
  const int64_t items = random_item_count(rng, pt.on_host() ? (V == 2048 ? 4000 : 700) : 20000, V, L);
  in.set = std::make_shared<const ConstraintSet>(constraint_set_random(items, L, V, rng()));
  in.tm = std::make_shared<const TransitionMatrix>(TransitionMatrix::build(*in.set, {d, layout_of(pt)}));
  in.M = M;
  in.groups = pt.on_host() ? std::uniform_int_distribution<int32_t>(1, 3)(rng) : 2;
  in.k = std::uniform_int_distribution<int32_t>(1, 2 * M)(rng);
  in.graph = pt.variant % 2 == 1;
  const int32_t n = in.n();
  std::normal_distribution<float> g(0.0f, 3.0f);
  in.logits.resize(at(n) * at(V));
  for (auto& x : in.logits) x = g(rng);
  for (int32_t i = 0; i < n * V / 50; ++i) in.logits[rng() % in.logits.size()] = -std::numeric_limits<float>::infinity();
  in.scores.resize(at(n));
  for (auto& x : in.scores) x = -std::uniform_real_distribution<double>(0.0, 4.0)(rng);
  for (int32_t t = 0; t < L; ++t) in.states.push_back(random_static_states(*in.set, *in.tm, n, t, rng));
  return in;
}

// |V|, d, layout, beams per group. On the host (the twin, the host runtime)
// not the largest |V| x M products (minutes each there): every layout, d,
// |V| and M still runs, M = 70 up to |V| = 40, |V| = 2048 with M <= 4.
std::vector<std::vector<int64_t>> step_shapes() {
  std::vector<std::vector<int64_t>> shapes;
  for (const int64_t V : {5, 40, 300, 2048, 40000})
    for (const int64_t M : {1, 4, 70})
      for (const int64_t d : {0, 1, 2})
        for (const int64_t layout : {0, 1}) {
          if (d == 2 && V > 4096) continue;  // d = 2 needs |V|^2 dense tables (App. B)
#ifdef TRIESCOPE_CUDA_HOST_RUNTIME
          if (V * M > 2048 * 4) continue;
#endif
          shapes.push_back({V, d, layout, M});
        }
  return shapes;
}

void step_compare(const TwinPoint& pt, const StepIn& in, const StepOut& want, const StepOut& got) {
  CAPTURE(in.set->size(), in.tm->length, in.groups, in.k, in.graph);
  REQUIRE(got.steps.size() == want.steps.size());
  for (size_t t = 0; t < want.steps.size(); ++t) {
    CAPTURE(t, in.states[t]);
    const StepAt &w = want.steps[t], &g = got.steps[t];
    CHECK(g.valid == w.valid);
    CHECK(g.count == w.count);
    CHECK(g.flat == w.flat);
    CHECK(g.next == w.next);
    REQUIRE(g.score.size() == w.score.size());
    // Scores within 1e-12 relative: StaticStep's log-normaliser sums the same
    // exponentials as log_softmax_row (the twin's) and the kernel's, in
    // another order (docs/static.md; core/constraint/static_step.h).
    size_t score_bad = 0;
    for (size_t o = 0; o < w.score.size(); ++o) score_bad += !close(g.score[o], w.score[o]);
    CHECK(score_bad == 0);
    REQUIRE(g.masked.size() == w.masked.size());
    if (pt.on_host()) {
      CHECK(g.masked == w.masked);  // the same values, the same -inf: a bit-identical projection
      CHECK(g.slot_tok == w.slot_tok);
      CHECK(g.slot_next == w.slot_next);
      CHECK(g.allowed_next == w.allowed_next);
    } else {
      // The kernel's own log-normaliser: -inf exactly where the twin's, values within 1e-12.
      int64_t mask_bad = 0, value_bad = 0;
      for (size_t i = 0; i < w.masked.size(); ++i) {
        mask_bad += std::isinf(g.masked[i]) != std::isinf(w.masked[i]) || (std::isinf(w.masked[i]) && g.masked[i] != w.masked[i]);
        if (!std::isinf(w.masked[i])) value_bad += !close(g.masked[i], w.masked[i]);
      }
      CHECK(mask_bad == 0);
      CHECK(value_bad == 0);
      CHECK(g.states == w.states);  // not advanced
      CHECK(g.step == w.step);
    }
  }
  if (!pt.on_host()) {
    CHECK(got.matrix_bytes >= want.matrix_bytes);
    CHECK(got.graphs == want.graphs);  // with graphs, one served every step
  }
}

[[maybe_unused]] const bool static_step = twin_register(TwinSpec<StepIn, StepOut>{
    .name = "fused STATIC step equals StaticStep: masks, valid counts, top-k, next states",
    .kernel = "cuda/static/static_step.cu",
    .tags = "[cuda][constraint]",
    .shapes = step_shapes(),
    .host_variants = 1,
    .device_variants = 2,  // 0: plain launches, 1: one CUDA graph replayed
    .inputs = random_step_in,
    .cpu = step_cpu,
    .host_twin = [](const StepIn& in, int32_t) { return step_host_twin(in); },
    .device = step_on_device,
    .compare = step_compare,
});

}  // namespace
}  // namespace triescope::testing
