// The paper's baselines (Sec. 5.2, Table 1), behind the same ConstraintIndex
// interface as STATIC and written independently of the CSR code (a reference
// must not share code with what it checks):
//  - PointerTrieIndex: the CPU trie, one heap node per prefix with a hash map
//    of children; a state is a node pointer (pointer chasing).
//  - PpvIndex: Parallel Prefix-Verification (Ye et al. 2025): the sorted flat
//    id array; every candidate extension is a binary search over all of it.
//    Exact over all |V| tokens, or approximate over the top-k logits only.
//  - HashBitmapIndex: a Bloom-style bitmap of hashed prefixes; false
//    positives (never false negatives), rate measured against an exact index.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/constraint/mask_both_precisions.h"
#include "core/constraint/constraint_set.h"

namespace triescope {

class PointerTrieIndex final : public MaskBothPrecisions<PointerTrieIndex> {
 public:
  explicit PointerTrieIndex(const ConstraintSet& c);
  std::string name() const override { return "pointer_trie"; }
  int32_t vocab_size() const override { return vocab_; }
  int32_t length() const override { return length_; }
  int64_t root_state() const override;
  int64_t next_state(int64_t state, int32_t token, int32_t step) const override;
  int64_t canonical_state(int64_t state, int32_t level) const override;
  int64_t trace_state(int64_t state, int32_t level) const override { return canonical_state(state, level); }
  bool exact() const override { return true; }
  int64_t memory_bytes() const override { return memory_bytes_; }
  nlohmann::json describe() const override;
  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }

 private:
  struct Node {
    std::unordered_map<int32_t, Node*> children;
    int64_t bfs_id = 0;
  };
  friend class MaskBothPrecisions<PointerTrieIndex>;
  template <class T>
  void mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path);
  int32_t vocab_ = 0, length_ = 0;
  std::deque<Node> nodes_;
  int64_t memory_bytes_ = 0;  // estimated: nodes + hash buckets + hash entries
};

class PpvIndex final : public MaskBothPrecisions<PpvIndex> {
 public:
  // top_k = 0: PPV exact (every token checked); top_k > 0: PPV approximate.
  PpvIndex(std::shared_ptr<const ConstraintSet> c, int32_t top_k);
  std::string name() const override { return top_k_ ? "ppv_approx_top" + std::to_string(top_k_) : "ppv_exact"; }
  int32_t vocab_size() const override { return set_->vocab_size; }
  int32_t length() const override { return set_->length; }
  int64_t root_state() const override { return 0; }
  // A state is the index of the first id holding the prefix (its lower bound).
  int64_t next_state(int64_t state, int32_t token, int32_t step) const override;
  int64_t canonical_state(int64_t state, int32_t level) const override;
  bool exact() const override { return top_k_ == 0; }
  int64_t memory_bytes() const override { return static_cast<int64_t>(set_->tokens.size() * sizeof(int32_t)); }
  nlohmann::json describe() const override;

 private:
  // Binary search over the whole sorted array for (prefix of `state`, token) on
  // the first step + 1 tokens; returns its lower bound or kDeadState.
  int64_t search(int64_t state, int32_t token, int32_t step) const;
  friend class MaskBothPrecisions<PpvIndex>;
  template <class T>
  void mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path);
  std::shared_ptr<const ConstraintSet> set_;
  int32_t top_k_;
};

class HashBitmapIndex final : public MaskBothPrecisions<HashBitmapIndex> {
 public:
  HashBitmapIndex(const ConstraintSet& c, int32_t bits_per_prefix = 10, int32_t num_hashes = 3);
  std::string name() const override { return "hash_bitmap"; }
  int32_t vocab_size() const override { return vocab_; }
  int32_t length() const override { return length_; }
  int64_t root_state() const override;
  // A state is the 64-bit hash of the prefix; any token extends it.
  int64_t next_state(int64_t state, int32_t token, int32_t step) const override;
  int64_t canonical_state(int64_t, int32_t) const override { return -1; }
  bool exact() const override { return false; }
  int64_t memory_bytes() const override { return static_cast<int64_t>(bits_.size() * sizeof(uint64_t)); }
  nlohmann::json describe() const override;
  // Bloom filter estimate (1 - e^{-k n / m})^k for the configured size.
  double expected_false_positive_rate() const;

 private:
  bool test(uint64_t prefix_hash) const;
  friend class MaskBothPrecisions<HashBitmapIndex>;
  template <class T>
  void mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path);
  int32_t vocab_ = 0, length_ = 0, k_ = 3;
  int64_t num_prefixes_ = 0;
  uint64_t num_bits_ = 0;
  std::vector<uint64_t> bits_;
};

}  // namespace triescope
