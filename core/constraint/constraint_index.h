// One interface for STATIC and its baselines (paper Table 1), so the beam
// decoders, the tests and the benchmark drive every implementation the same
// way: mask a batch of B x M beams' log-probabilities in place (Alg. 1 phase
// 2, "Where(m, P, -inf)"), then advance the chosen beams' states.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace triescope {

// Which path served a beam's mask (recorded in traces).
enum class MaskPath : uint8_t { dense = 0, sparse = 1, pointer = 2, search = 3, hash = 4 };
const char* mask_path_name(MaskPath p);

// Sets row[0 .. n) to -inf with a string store from a register (rep stos on
// x86-64): a plain fill of floats compiles to a scalar store loop at -O2, and
// the projection (writing the whole [B*M x |V|] mask) is the floor of every
// method.
template <class T>
void fill_neg_inf(T* row, int64_t n);

// A state no valid prefix leads to (never produced for a token the mask kept).
inline constexpr int64_t kDeadState = -1;

class ConstraintIndex {
 public:
  virtual ~ConstraintIndex() = default;
  virtual std::string name() const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t length() const = 0;
  virtual int64_t root_state() const = 0;
  // logprobs [n x |V|] in place: -inf for every token beam i (in states[i], at
  // 0-based step `step` = trie level of states[i]) may not emit. valid [n] and
  // path [n] are filled when not null.
  virtual void mask(const int64_t* states, int32_t n, int32_t step, float* logprobs, int32_t* valid, MaskPath* path) = 0;
  virtual void mask(const int64_t* states, int32_t n, int32_t step, double* logprobs, int32_t* valid, MaskPath* path) = 0;
  // State after `token` from `state` (kDeadState when the index knows it is invalid).
  virtual int64_t next_state(int64_t state, int32_t token, int32_t step) const = 0;
  // The breadth-first node id (TransitionMatrix numbering) of a state at trie
  // level `level`, so tests can compare states across implementations; -1
  // where an implementation cannot know it (the hash bitmap).
  virtual int64_t canonical_state(int64_t state, int32_t level) const = 0;
  // True when the mask equals F_t (Sec. 4.1) exactly.
  virtual bool exact() const = 0;
  virtual int64_t memory_bytes() const = 0;
  virtual nlohmann::json describe() const = 0;
  // What a trace records as a beam's state (deterministic across runs: the
  // pointer trie records its node's breadth-first id, not the address).
  virtual int64_t trace_state(int64_t state, int32_t /*level*/) const { return state; }
  // Adds path details to a beam's trace record (VNTK: its CSR row slice).
  virtual void trace_extra(int64_t /*state*/, int32_t /*step*/, nlohmann::json& /*rec*/) const {}
};

}  // namespace triescope
