#include "core/model/synthetic_model.h"

#include <algorithm>
#include <limits>

#include "core/common/error.h"
#include "core/common/hash.h"

namespace triescope {

namespace {
constexpr uint64_t kTok = 0x100000001b3ull, kPos = 0xc2b2ae3d27d4eb4full, kRel = 0x165667b19e3779f9ull;
}  // namespace

void synthetic_logits_fixed(const SyntheticConfig& cfg, const int32_t* tokens, const int32_t* positions,
                            int32_t num_visible, int32_t query_position, int32_t* out) {
  // full: order-free sum over the visible multiset of (token, position).
  // local: the tokens within `ngram` positions of the query, by relative
  // position, so repeated n-grams repeat predictions (lookahead hits).
  uint64_t full = 0, local = 0;
  for (int32_t i = 0; i < num_visible; ++i) {
    const uint64_t t = static_cast<uint32_t>(tokens[i]), p = static_cast<uint32_t>(positions[i]);
    full += splitmix64(cfg.seed ^ (t * kTok) ^ (p * kPos));
    const int64_t rel = int64_t{query_position} - positions[i];
    if (rel >= 0 && rel < cfg.ngram) local += splitmix64((cfg.seed * 31u) ^ (t * kTok) ^ (static_cast<uint64_t>(rel) * kRel));
  }
  const int64_t r = cfg.repetitiveness_q8;
  int32_t best = std::numeric_limits<int32_t>::min();
  for (int32_t v = 0; v < cfg.vocab_size; ++v) {
    const uint64_t vv = static_cast<uint64_t>(v) * 0x9e3779b97f4a7c15ull;
    const int64_t raw_full = static_cast<int64_t>(splitmix64(full ^ vv) & 0xffff);
    const int64_t raw_local = static_cast<int64_t>(splitmix64(local ^ vv ^ 0x5bd1e995ull) & 0xffff);
    int64_t base = (raw_local * r + raw_full * (256 - r)) >> 8;
    // Always a small full-context term, so any visible slot moves the logits
    // even at repetitiveness 1.
    base += static_cast<int64_t>(splitmix64(full ^ vv ^ 0xabcdefull) & 0x3);
    if (cfg.perturb_q8 != 0)
      base += ((static_cast<int64_t>(splitmix64(full ^ vv ^ cfg.perturb_seed) & 0xffff) - 32768) * cfg.perturb_q8) >> 8;
    const int64_t fixed = (base * cfg.peakiness_q8) >> 8;
    out[v] = static_cast<int32_t>(fixed);
    best = std::max(best, out[v]);
  }
  if (cfg.eos_token >= 0) {
    const bool hit = static_cast<int64_t>(splitmix64(full ^ 0xe05e05ull) % 1000000u) < cfg.eos_per_million;
    out[cfg.eos_token] = hit ? best + 4096 : 0;  // top by one logit unit, or at the floor
  }
}

SyntheticModel::SyntheticModel(SyntheticConfig cfg) : cfg_(cfg) {
  TS_CHECK(cfg_.vocab_size >= 2, "synthetic model: vocab_size must be >= 2, got " << cfg_.vocab_size);
  TS_CHECK(cfg_.eos_token < cfg_.vocab_size, "synthetic model: eos_token " << cfg_.eos_token << " >= vocab_size "
                                                                          << cfg_.vocab_size);
  TS_CHECK(cfg_.ngram >= 1, "synthetic model: ngram must be >= 1, got " << cfg_.ngram);
}

void SyntheticModel::forward(const StepInput& in, Logits& out) {
  step_input_check(in, cfg_.vocab_size);
  cache_.write(in);
  const int32_t q = static_cast<int32_t>(in.tokens.size());
  out.resize(q, cfg_.vocab_size);
  std::vector<int32_t> vt, vp, fixed(static_cast<size_t>(cfg_.vocab_size));
  for (int32_t r = 0; r < q; ++r) {
    vt.clear();
    vp.clear();
    const uint64_t* w = in.mask.row(r);
    for (int32_t wi = 0; wi < in.mask.words_per_row; ++wi)
      for (uint64_t bits = w[wi]; bits; bits &= bits - 1) {
        const int32_t s = wi * 64 + __builtin_ctzll(bits);
        TS_CHECK(cache_.tokens[static_cast<size_t>(s)] >= 0, "synthetic model: query " << r << " reads empty slot " << s);
        vt.push_back(cache_.tokens[static_cast<size_t>(s)]);
        vp.push_back(cache_.positions[static_cast<size_t>(s)]);
      }
    synthetic_logits_fixed(cfg_, vt.data(), vp.data(), static_cast<int32_t>(vt.size()), in.positions[static_cast<size_t>(r)],
                           fixed.data());
    float* o = out.row(r);
    for (int32_t v = 0; v < cfg_.vocab_size; ++v) o[v] = static_cast<float>(fixed[static_cast<size_t>(v)]) * kSyntheticLogitScale;
  }
}

void SyntheticModel::compact(const CompactionPlan& plan) { cache_.compact(plan); }

nlohmann::json SyntheticModel::describe() const {
  return {{"type", "synthetic"},
          {"vocab_size", cfg_.vocab_size},
          {"seed", cfg_.seed},
          {"peakiness", cfg_.peakiness_q8 / 256.0},
          {"repetitiveness", cfg_.repetitiveness_q8 / 256.0},
          {"ngram", cfg_.ngram},
          {"eos_token", cfg_.eos_token},
          {"eos_rate", cfg_.eos_per_million / 1e6},
          {"perturb_seed", cfg_.perturb_seed},
          {"perturb", cfg_.perturb_q8 / 256.0}};
}

}  // namespace triescope
