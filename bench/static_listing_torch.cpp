#include "bench/static_listing_torch.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "core/common/error.h"
#include "core/constraint/constraint_index.h"

namespace triescope {

namespace {

using torch::indexing::Slice;

// Population count of values in [0, 2^32) held in int64 (SWAR; LibTorch 1.13 has no popcount op).
torch::Tensor popcount32(torch::Tensor x) {
  x = x - torch::bitwise_and(torch::bitwise_right_shift(x, 1), 0x55555555);
  x = torch::bitwise_and(x, 0x33333333) + torch::bitwise_and(torch::bitwise_right_shift(x, 2), 0x33333333);
  x = torch::bitwise_and(x + torch::bitwise_right_shift(x, 4), 0x0F0F0F0F);
  x = x + torch::bitwise_right_shift(x, 8);
  x = x + torch::bitwise_right_shift(x, 16);
  return torch::bitwise_and(x, 0x3F);
}

// Set bits of 64-bit word w strictly below bit b (b in [0, 64)), without
// shifting into int64's sign bit: the word is split into two 32-bit halves.
torch::Tensor popcount_below(const torch::Tensor& w, const torch::Tensor& b) {
  const auto lo = torch::bitwise_and(w, int64_t{0xFFFFFFFF});
  const auto hi = torch::bitwise_and(torch::bitwise_right_shift(w, 32), int64_t{0xFFFFFFFF});
  const auto one = torch::ones_like(b);
  const auto mask_lo = torch::bitwise_left_shift(one, b.clamp_max(32)) - 1;
  const auto mask_hi = torch::bitwise_left_shift(one, (b - 32).clamp_min(0)) - 1;
  return popcount32(torch::bitwise_and(lo, mask_lo)) + popcount32(torch::bitwise_and(hi, mask_hi));
}

// Bit b of w (arithmetic shift is fine: only the lowest bit is kept).
torch::Tensor bit_of(const torch::Tensor& w, const torch::Tensor& b) {
  return torch::bitwise_and(torch::bitwise_right_shift(w, b), 1).to(torch::kBool);
}

template <class T>
torch::Tensor host_tensor(const std::vector<T>& v, torch::ScalarType type) {
  std::vector<int64_t> wide(v.begin(), v.end());
  return torch::from_blob(wide.data(), {static_cast<int64_t>(wide.size())}, torch::kLong).to(type).clone();
}

}  // namespace

struct StaticListingTorch::Impl {
  torch::Device dev{torch::kCPU};
  int32_t V = 0, L = 0, d = 0, wpr = 0;
  CsrLayout layout = CsrLayout::stacked;
  int64_t E = 0, S = 0, num_rows = 0;
  std::vector<int64_t> level_start;
  std::vector<int32_t> max_branch;

  torch::Tensor row_ptr;           // [rows + 2] (stacked: [S + 1])
  torch::Tensor edges;             // stacked [E x 2] int32 (token, next)
  torch::Tensor cols;              // compact [E] int16 (|V| <= 32768) or int32
  torch::Tensor mask1, mask2;      // int64 bit patterns of the packed masks
  torch::Tensor dstates1, dstates2;  // stacked dense state tables (int32)
  torch::Tensor rank1, rank2;      // compact rank directories (int32)
  torch::Tensor word_idx, bit_idx; // [V]: v >> 6, v & 63
  torch::Tensor neg_inf;           // scalar -inf on the device

  // Inputs.
  int32_t n = 0;
  torch::Tensor logits, states, beam_scores;
  // Outputs of the last run().
  torch::Tensor masked, valid, top_score, top_flat, top_next, top_count;

  torch::TensorOptions opt(torch::ScalarType t) const { return torch::TensorOptions().dtype(t).device(dev); }

  // Token on edge e (e in range), as int64.
  torch::Tensor edge_token(const torch::Tensor& e) const {
    const auto flat = e.reshape({-1});
    const auto t = layout == CsrLayout::stacked ? edges.index_select(0, flat).select(1, 0) : cols.index_select(0, flat);
    return t.to(torch::kLong).reshape(e.sizes());
  }

  struct Slice_ {
    torch::Tensor toks;   // [m x B_t] token, V in invalid slots
    torch::Tensor nexts;  // [m x B_t] next state, 0 in invalid slots (Alg. 2 line 16)
    torch::Tensor ok;     // [m x B_t] valid slots
  };
  // Alg. 2 phases 1-3 for states [m].
  Slice_ slice(const torch::Tensor& s, int32_t step) const {
    const int64_t Bt = max_branch[static_cast<size_t>(step)];
    // Phase 1: boundary lookup; states outside the rows (leaves, dead beams) read an empty row.
    const auto r = torch::where((s >= 0) & (s < num_rows), s, torch::full_like(s, num_rows));
    const auto start = row_ptr.index_select(0, r).to(torch::kLong);
    const auto len = row_ptr.index_select(0, r + 1).to(torch::kLong) - start;
    // Phase 2: fixed-width slice (arange + gather; past the edge array reads 0, mode="fill").
    const auto offsets = torch::arange(Bt, opt(torch::kLong));
    const auto idx = start.unsqueeze(1) + offsets.unsqueeze(0);
    const auto in_range = idx < E;
    const auto idx_c = idx.clamp_max(E - 1);
    const auto zero = torch::zeros_like(idx);
    const auto tok_raw = torch::where(in_range, edge_token(idx_c), zero);
    torch::Tensor next_raw;
    if (layout == CsrLayout::stacked)
      next_raw = torch::where(in_range, edges.index_select(0, idx_c.reshape({-1})).select(1, 1).to(torch::kLong).reshape(idx.sizes()), zero);
    else
      next_raw = torch::where(in_range, idx + 1, zero);  // implied: edge e enters state e + 1
    // Phase 3: sanitisation.
    const auto ok = offsets.unsqueeze(0) < len.unsqueeze(1);
    return {torch::where(ok, tok_raw, torch::full_like(tok_raw, V)), torch::where(ok, next_raw, zero), ok};
  }

  // Dense levels: allowed-token mask [m x V] for states [m] at step 0 or 1.
  torch::Tensor dense_mask(const torch::Tensor& s, int32_t step) const {
    if (step == 0) {
      const auto bits = bit_of(mask1.index_select(0, word_idx), bit_idx);  // [V]
      return bits.unsqueeze(0) & (s == 0).unsqueeze(1);
    }
    const auto in_l1 = (s >= level_start[1]) & (s < level_start[2]);
    const auto t1 = edge_token((torch::where(in_l1, s, torch::full_like(s, level_start[1])) - 1));  // D[t1, :]
    const auto words = mask2.view({V, wpr}).index_select(0, t1);                                  // [m x wpr]
    return bit_of(words.index_select(1, word_idx), bit_idx.unsqueeze(0)) & in_l1.unsqueeze(1);
  }

  // Dense levels: state after (s, tok), kDeadState where not allowed.
  torch::Tensor dense_next(const torch::Tensor& s, const torch::Tensor& tok_in, int32_t step) const {
    const auto tok_ok = (tok_in >= 0) & (tok_in < V);
    const auto tok = tok_in.clamp(0, V - 1);
    const auto b = torch::bitwise_and(tok, 63);
    torch::Tensor allowed, word, w, next;
    if (step == 0) {
      word = torch::bitwise_right_shift(tok, 6);
      w = mask1.index_select(0, word);
      allowed = (s == 0) & bit_of(w, b);
      if (layout == CsrLayout::stacked) next = dstates1.index_select(0, tok).to(torch::kLong);
      else next = level_start[1] + rank1.index_select(0, word).to(torch::kLong) + popcount_below(w, b);
    } else {
      const auto in_l1 = (s >= level_start[1]) & (s < level_start[2]);
      const auto t1 = edge_token(torch::where(in_l1, s, torch::full_like(s, level_start[1])) - 1);
      word = t1 * wpr + torch::bitwise_right_shift(tok, 6);
      w = mask2.index_select(0, word);
      allowed = in_l1 & bit_of(w, b);
      if (layout == CsrLayout::stacked) next = dstates2.index_select(0, t1 * V + tok).to(torch::kLong);
      else next = level_start[2] + rank2.index_select(0, word).to(torch::kLong) + popcount_below(w, b);
    }
    return torch::where(allowed & tok_ok, next, torch::full_like(next, kDeadState));
  }

  // Sparse levels: the chosen token's next state from its beam's slice (the Gather of Alg. 1 phase 4).
  static torch::Tensor slice_next(const Slice_& sl, const torch::Tensor& tok) {
    const auto eq = (sl.toks == tok.unsqueeze(1)) & sl.ok;
    const auto found = eq.any(1);
    const auto next = (sl.nexts * eq.to(torch::kLong)).sum(1);
    return torch::where(found, next, torch::full_like(next, kDeadState));
  }
};

StaticListingTorch::StaticListingTorch(const TransitionMatrix& tm, const std::string& device) : impl_(std::make_unique<Impl>()) {
  std::string why;
  TS_CHECK(device_usable(device, &why), "Algorithm 2 listing (torch): device \"" << device << "\" is not usable: " << why);
  torch::NoGradGuard ng;
  Impl& m = *impl_;
  m.dev = torch::Device(device);
  m.V = tm.vocab_size;
  m.L = tm.length;
  m.d = tm.dense_levels;
  m.wpr = tm.words_per_row;
  m.layout = tm.layout;
  m.E = tm.num_edges();
  m.S = tm.num_states();
  m.level_start = tm.level_start;
  m.max_branch = tm.max_branch;
  const auto on = [&](torch::Tensor t) { return t.to(m.dev); };
  if (tm.layout == CsrLayout::stacked) {
    m.num_rows = static_cast<int64_t>(tm.row_ptr.size()) - 2;  // every state has a row; the last (a leaf) is the dead row
    m.row_ptr = on(torch::from_blob(const_cast<int32_t*>(tm.row_ptr.data()), {static_cast<int64_t>(tm.row_ptr.size())}, torch::kInt).clone());
    m.edges = on(torch::from_blob(const_cast<int32_t*>(tm.edges.data()), {m.E, 2}, torch::kInt).clone());
  } else {
    m.num_rows = static_cast<int64_t>(tm.row_ptr_compact.size()) - 2;
    // LibTorch 1.13 has no uint32/uint16: row pointers in int32 while they fit, tokens in int16 while |V| <= 32768.
    m.row_ptr = on(host_tensor(tm.row_ptr_compact, m.E < (int64_t{1} << 31) ? torch::kInt : torch::kLong));
    if (!tm.cols16.empty()) m.cols = on(host_tensor(tm.cols16, m.V <= 32768 ? torch::kShort : torch::kInt));
    else m.cols = on(host_tensor(tm.cols32, torch::kInt));
  }
  const auto words = [&](const std::vector<uint64_t>& v) {
    return on(torch::from_blob(const_cast<uint64_t*>(v.data()), {static_cast<int64_t>(v.size())}, torch::kLong).clone());
  };
  if (m.d >= 1) {
    m.mask1 = words(tm.dense_mask1);
    if (tm.layout == CsrLayout::stacked)
      m.dstates1 = on(torch::from_blob(const_cast<int32_t*>(tm.dense_states1.data()), {m.V}, torch::kInt).clone());
    else
      m.rank1 = on(host_tensor(tm.dense_rank1, torch::kLong).to(torch::kInt));
  }
  if (m.d >= 2) {
    m.mask2 = words(tm.dense_mask2);
    if (tm.layout == CsrLayout::stacked)
      m.dstates2 = on(torch::from_blob(const_cast<int32_t*>(tm.dense_states2.data()), {static_cast<int64_t>(tm.dense_states2.size())}, torch::kInt).clone());
    else
      m.rank2 = on(host_tensor(tm.dense_rank2, torch::kLong).to(torch::kInt));
  }
  const auto ar = torch::arange(static_cast<int64_t>(m.V), m.opt(torch::kLong));
  m.word_idx = torch::bitwise_right_shift(ar, 6);
  m.bit_idx = torch::bitwise_and(ar, 63);
  m.neg_inf = torch::full({}, -std::numeric_limits<float>::infinity(), m.opt(torch::kFloat));
}

StaticListingTorch::~StaticListingTorch() = default;

bool StaticListingTorch::device_usable(const std::string& device, std::string* why) {
  try {
    const torch::Device dev(device);
    if (dev.is_cpu()) return true;
    if (dev.is_cuda()) {
      if (!torch::cuda::is_available()) {
        if (why) *why = "this LibTorch has no usable CUDA device (CPU-only build, or no device)";
        return false;
      }
      if (dev.has_index() && dev.index() >= static_cast<int64_t>(torch::cuda::device_count())) {
        if (why) *why = "no CUDA device with index " + std::to_string(dev.index());
        return false;
      }
      return true;
    }
    if (why) *why = "only cpu and cuda devices are supported";
    return false;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

void StaticListingTorch::set_cpu_threads(int n) { torch::set_num_threads(std::max(1, n)); }

int64_t StaticListingTorch::device_bytes() const {
  const Impl& m = *impl_;
  int64_t b = 0;
  for (const auto* t : {&m.row_ptr, &m.edges, &m.cols, &m.mask1, &m.mask2, &m.dstates1, &m.dstates2, &m.rank1, &m.rank2})
    if (t->defined()) b += t->numel() * static_cast<int64_t>(t->element_size());
  return b;
}

void StaticListingTorch::set_inputs(const float* logits, int32_t n, const int64_t* states, const double* beam_scores) {
  TS_CHECK(n >= 1, "Algorithm 2 listing (torch): needs at least one beam, got " << n);
  torch::NoGradGuard ng;
  Impl& m = *impl_;
  m.n = n;
  m.logits = torch::from_blob(const_cast<float*>(logits), {n, m.V}, torch::kFloat).to(m.dev, /*non_blocking=*/false, /*copy=*/true);
  m.states = torch::from_blob(const_cast<int64_t*>(states), {n}, torch::kLong).to(m.dev, false, true);
  m.beam_scores = torch::from_blob(const_cast<double*>(beam_scores), {n}, torch::kDouble).to(m.dev, false, true);
}

void StaticListingTorch::run(int32_t step, int32_t groups, int32_t k, bool keep_masked) {
  Impl& m = *impl_;
  TS_CHECK(m.n >= 1, "Algorithm 2 listing (torch): run() before set_inputs()");
  TS_CHECK(step >= 0 && step < m.L, "Algorithm 2 listing (torch): step " << step << " outside [0, L = " << m.L << ")");
  TS_CHECK(groups >= 1 && m.n % groups == 0, "Algorithm 2 listing (torch): " << m.n << " beams do not split into " << groups << " groups");
  const int64_t M = m.n / groups;
  TS_CHECK(k >= 1 && k <= M * m.V, "Algorithm 2 listing (torch): k = " << k << " outside [1, " << M * m.V << "]");
  torch::NoGradGuard ng;
  // Alg. 1 phase 1.
  const auto lp = torch::log_softmax(m.logits, 1);
  // Phase 2: dense lookup for t < d, VNTK after.
  torch::Tensor masked;
  Impl::Slice_ sl;
  const bool dense = step < m.d;
  if (dense) {
    const auto allow = m.dense_mask(m.states, step);
    masked = torch::where(allow, lp, m.neg_inf);
    m.valid = allow.sum(1).to(torch::kInt);
  } else {
    sl = m.slice(m.states, step);
    // Phase 4 projection: gather the candidates' log-probs, scatter them into a
    // -inf row with a dummy column |V| for the invalid slots.
    const auto cand_lp = torch::where(sl.ok, lp.gather(1, sl.toks.clamp_max(m.V - 1)), m.neg_inf);
    masked = torch::full({m.n, m.V + 1}, -std::numeric_limits<float>::infinity(), m.opt(torch::kFloat))
                 .scatter_(1, sl.toks, cand_lp)
                 .narrow(1, 0, m.V);
    m.valid = sl.ok.sum(1).to(torch::kInt);
  }
  // Phase 3: per-group top-k of beam score + masked log-prob over the group's M x V entries.
  const auto scores = (masked.to(torch::kDouble) + m.beam_scores.unsqueeze(1)).reshape({groups, M * m.V});
  auto [vals, idx] = torch::topk(scores, k, 1, /*largest=*/true, /*sorted=*/true);
  const auto finite = torch::isfinite(vals);
  const auto flat = (idx + torch::arange(static_cast<int64_t>(groups), m.opt(torch::kLong)).unsqueeze(1) * (M * m.V)).reshape({-1});
  const auto rows = torch::div(flat, m.V, "floor");
  const auto toks = flat - rows * m.V;
  // Phase 4: next states of the chosen candidates.
  torch::Tensor next;
  if (dense) {
    next = m.dense_next(m.states.index_select(0, rows), toks, step);
  } else {
    const Impl::Slice_ chosen{sl.toks.index_select(0, rows), sl.nexts.index_select(0, rows), sl.ok.index_select(0, rows)};
    next = Impl::slice_next(chosen, toks);
  }
  const auto fin = finite.reshape({-1});
  m.top_score = torch::where(finite, vals, torch::zeros_like(vals));
  m.top_flat = torch::where(fin, flat, torch::full_like(flat, -1)).reshape({groups, k});
  m.top_next = torch::where(fin, next, torch::full_like(next, kDeadState)).reshape({groups, k});
  m.top_count = finite.sum(1).to(torch::kInt);
  m.masked = keep_masked ? masked : torch::Tensor();
}

void StaticListingTorch::run_unconstrained(int32_t groups, int32_t k) {
  Impl& m = *impl_;
  TS_CHECK(m.n >= 1, "Algorithm 2 listing (torch): run_unconstrained() before set_inputs()");
  TS_CHECK(groups >= 1 && m.n % groups == 0, "Algorithm 2 listing (torch): " << m.n << " beams do not split into " << groups << " groups");
  const int64_t M = m.n / groups;
  TS_CHECK(k >= 1 && k <= M * m.V, "Algorithm 2 listing (torch): k = " << k << " outside [1, " << M * m.V << "]");
  torch::NoGradGuard ng;
  const auto lp = torch::log_softmax(m.logits, 1);
  const auto scores = (lp.to(torch::kDouble) + m.beam_scores.unsqueeze(1)).reshape({groups, M * m.V});
  auto [vals, idx] = torch::topk(scores, k, 1, true, true);
  m.top_score = vals;
  m.top_flat = idx;
  m.top_next = torch::Tensor();  // result() is for run() only
}

void StaticListingTorch::synchronize() const {
  if (impl_->dev.is_cuda()) torch::cuda::synchronize(impl_->dev.index());
}

StaticListingTorchResult StaticListingTorch::result() const {
  const Impl& m = *impl_;
  TS_CHECK(m.top_next.defined(), "Algorithm 2 listing (torch): result() needs a run() first");
  const auto host = [](const torch::Tensor& t, auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto c = t.to(torch::kCPU).contiguous();
    return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
  };
  StaticListingTorchResult r;
  if (m.masked.defined()) r.masked_logprobs = host(m.masked, static_cast<float*>(nullptr));
  r.valid = host(m.valid, static_cast<int32_t*>(nullptr));
  r.top_score = host(m.top_score, static_cast<double*>(nullptr));
  r.top_flat = host(m.top_flat, static_cast<int64_t*>(nullptr));
  r.top_next = host(m.top_next, static_cast<int64_t*>(nullptr));
  r.top_count = host(m.top_count, static_cast<int32_t*>(nullptr));
  return r;
}

std::vector<int64_t> StaticListingTorch::next_states(const std::vector<int64_t>& states, const std::vector<int32_t>& tokens, int32_t step) const {
  const Impl& m = *impl_;
  TS_CHECK(states.size() == tokens.size(), "Algorithm 2 listing (torch): next_states needs one token per state");
  TS_CHECK(step >= 0 && step < m.L, "Algorithm 2 listing (torch): step " << step << " outside [0, L = " << m.L << ")");
  if (states.empty()) return {};
  torch::NoGradGuard ng;
  const int64_t cnt = static_cast<int64_t>(states.size());
  const auto s = torch::from_blob(const_cast<int64_t*>(states.data()), {cnt}, torch::kLong).to(m.dev, false, true);
  const auto t = torch::from_blob(const_cast<int32_t*>(tokens.data()), {cnt}, torch::kInt).to(m.dev, false, true).to(torch::kLong);
  // Core's contract: a state outside [0, S) is dead.
  const auto in = (s >= 0) & (s < m.S);
  const auto s_safe = torch::where(in, s, torch::zeros_like(s));
  torch::Tensor next = step < m.d ? m.dense_next(s_safe, t, step) : Impl::slice_next(m.slice(s_safe, step), t);
  next = torch::where(in, next, torch::full_like(next, kDeadState)).to(torch::kCPU).contiguous();
  return std::vector<int64_t>(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + cnt);
}

}  // namespace triescope
