#include "core/constraint/baselines.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/common/error.h"

namespace triescope {

// ---------------------------------------------------------------- pointer trie

PointerTrieIndex::PointerTrieIndex(const ConstraintSet& c) : vocab_(c.vocab_size), length_(c.length) {
  nodes_.emplace_back();
  for (int64_t i = 0; i < c.size(); ++i) {
    Node* cur = &nodes_.front();
    for (int32_t j = 0; j < length_; ++j) {
      auto [it, fresh] = cur->children.try_emplace(c.item(i)[j], nullptr);
      if (fresh) {
        nodes_.emplace_back();
        it->second = &nodes_.back();
      }
      cur = it->second;
    }
  }
  // Breadth-first ids with children in token order: the CSR numbering, found
  // here by walking the pointers (not by sharing the CSR builder).
  std::vector<Node*> level = {&nodes_.front()};
  int64_t next_id = 0;
  while (!level.empty()) {
    std::vector<Node*> below;
    for (Node* nd : level) {
      nd->bfs_id = next_id++;
      std::vector<std::pair<int32_t, Node*>> kids(nd->children.begin(), nd->children.end());
      std::sort(kids.begin(), kids.end(), [](auto& a, auto& b) { return a.first < b.first; });
      for (auto& k : kids) below.push_back(k.second);
    }
    level = std::move(below);
  }
  // Node objects + bucket arrays + one heap entry (key, pointer, next, cached hash) per child.
  memory_bytes_ = 0;
  for (const Node& nd : nodes_)
    memory_bytes_ += static_cast<int64_t>(sizeof(Node) + nd.children.bucket_count() * sizeof(void*) + nd.children.size() * 32);
}

int64_t PointerTrieIndex::root_state() const { return static_cast<int64_t>(reinterpret_cast<intptr_t>(&nodes_.front())); }

template <class T>
void PointerTrieIndex::mask_impl(const int64_t* states, int32_t n, int32_t /*step*/, T* lp, int32_t* valid, MaskPath* path) {
  std::vector<std::pair<int32_t, T>> keep;
  for (int32_t i = 0; i < n; ++i) {
    T* row = lp + static_cast<size_t>(i) * static_cast<size_t>(vocab_);
    keep.clear();
    if (states[i] != kDeadState) {
      const Node* nd = reinterpret_cast<const Node*>(static_cast<intptr_t>(states[i]));
      for (const auto& [tok, child] : nd->children) keep.emplace_back(tok, row[tok]);
    }
    fill_neg_inf(row, vocab_);
    for (auto& [tok, v] : keep) row[tok] = v;
    if (valid) valid[i] = static_cast<int32_t>(keep.size());
    if (path) path[i] = MaskPath::pointer;
  }
}
// MaskBothPrecisions calls these from every file that builds the index.
template void PointerTrieIndex::mask_impl(const int64_t*, int32_t, int32_t, float*, int32_t*, MaskPath*);
template void PointerTrieIndex::mask_impl(const int64_t*, int32_t, int32_t, double*, int32_t*, MaskPath*);

int64_t PointerTrieIndex::next_state(int64_t state, int32_t token, int32_t) const {
  if (state == kDeadState) return kDeadState;
  const Node* nd = reinterpret_cast<const Node*>(static_cast<intptr_t>(state));
  const auto it = nd->children.find(token);
  return it == nd->children.end() ? kDeadState : static_cast<int64_t>(reinterpret_cast<intptr_t>(it->second));
}

int64_t PointerTrieIndex::canonical_state(int64_t state, int32_t) const {
  if (state == kDeadState) return -1;
  return reinterpret_cast<const Node*>(static_cast<intptr_t>(state))->bfs_id;
}

nlohmann::json PointerTrieIndex::describe() const {
  return {{"impl", "pointer_trie"}, {"nodes", num_nodes()}, {"bytes_estimated", memory_bytes_}};
}

// ---------------------------------------------------------------- PPV

PpvIndex::PpvIndex(std::shared_ptr<const ConstraintSet> c, int32_t top_k) : set_(std::move(c)), top_k_(top_k) {
  TS_CHECK(set_ && set_->size() > 0, "ppv: empty constraint set");
  TS_CHECK(top_k_ >= 0, "ppv: top_k must be >= 0, got " << top_k_);
}

int64_t PpvIndex::search(int64_t state, int32_t token, int32_t step) const {
  const int64_t n = set_->size();
  if (state < 0 || state >= n || step < 0 || step >= set_->length) return kDeadState;
  const int32_t* prefix = set_->item(state);  // its first `step` tokens are the beam's prefix
  // key = (prefix[0..step), token); compare the first step + 1 tokens.
  auto less_than_key = [&](int64_t i) {
    const int32_t* it = set_->item(i);
    for (int32_t j = 0; j < step; ++j)
      if (it[j] != prefix[j]) return it[j] < prefix[j];
    return it[step] < token;
  };
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (less_than_key(mid)) lo = mid + 1;
    else hi = mid;
  }
  if (lo == n) return kDeadState;
  const int32_t* it = set_->item(lo);
  for (int32_t j = 0; j < step; ++j)
    if (it[j] != prefix[j]) return kDeadState;
  return it[step] == token ? lo : kDeadState;
}

template <class T>
void PpvIndex::mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int32_t V = set_->vocab_size;
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::vector<char> ok(static_cast<size_t>(V));
  for (int32_t i = 0; i < n; ++i) {
    T* row = lp + static_cast<size_t>(i) * static_cast<size_t>(V);
    int32_t count = 0;
    if (top_k_ == 0 || top_k_ >= V) {
      for (int32_t v = 0; v < V; ++v) {
        const bool keep = search(states[i], v, step) != kDeadState;
        row[v] = keep ? row[v] : kNegInf;
        count += keep;
      }
    } else {
      // Only the top-k log-probs are verified (Ye et al.); the rest are masked.
      std::iota(order.begin(), order.end(), 0);
      std::nth_element(order.begin(), order.begin() + top_k_, order.end(),
                       [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      std::fill(ok.begin(), ok.end(), 0);
      for (int32_t k = 0; k < top_k_; ++k) {
        const int32_t v = order[static_cast<size_t>(k)];
        ok[static_cast<size_t>(v)] = search(states[i], v, step) != kDeadState;
      }
      for (int32_t v = 0; v < V; ++v) {
        row[v] = ok[static_cast<size_t>(v)] ? row[v] : kNegInf;
        count += ok[static_cast<size_t>(v)];
      }
    }
    if (valid) valid[i] = count;
    if (path) path[i] = MaskPath::search;
  }
}
template void PpvIndex::mask_impl(const int64_t*, int32_t, int32_t, float*, int32_t*, MaskPath*);
template void PpvIndex::mask_impl(const int64_t*, int32_t, int32_t, double*, int32_t*, MaskPath*);

int64_t PpvIndex::next_state(int64_t state, int32_t token, int32_t step) const { return search(state, token, step); }

int64_t PpvIndex::canonical_state(int64_t state, int32_t level) const {
  // Breadth-first id = nodes on the levels above + distinct level-prefixes
  // before the state's first id. O(|C| L): for tests.
  if (state < 0 || state >= set_->size()) return -1;
  const int32_t L = set_->length;
  auto new_prefix = [&](int64_t i, int32_t l) {  // item i opens a new length-l prefix
    if (i == 0) return true;
    return !std::equal(set_->item(i), set_->item(i) + l, set_->item(i - 1));
  };
  int64_t id = 0;
  for (int32_t l = 0; l < level && l <= L; ++l) {
    if (l == 0) {
      id += 1;
      continue;
    }
    for (int64_t i = 0; i < set_->size(); ++i) id += new_prefix(i, l);
  }
  if (level == 0) return 0;
  for (int64_t i = 0; i < state; ++i) id += new_prefix(i, level);
  return id;
}

nlohmann::json PpvIndex::describe() const {
  return {{"impl", top_k_ ? "ppv_approx" : "ppv_exact"}, {"top_k", top_k_}, {"items", set_->size()}, {"bytes", memory_bytes()}};
}

// ---------------------------------------------------------------- hash bitmap

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
constexpr uint64_t kHashRoot = 0x243F6A8885A308D3ull;
uint64_t hash_extend(uint64_t h, int32_t token) { return splitmix64(h ^ (static_cast<uint64_t>(token) + 1) * 0xD6E8FEB86659FD93ull); }
}  // namespace

HashBitmapIndex::HashBitmapIndex(const ConstraintSet& c, int32_t bits_per_prefix, int32_t num_hashes)
    : vocab_(c.vocab_size), length_(c.length), k_(num_hashes) {
  TS_CHECK(bits_per_prefix >= 1 && num_hashes >= 1, "hash bitmap: bits_per_prefix and num_hashes must be >= 1");
  const int32_t L = c.length;
  for (int64_t i = 0; i < c.size(); ++i) {
    int32_t shared = 0;
    if (i) while (shared < L && c.item(i)[shared] == c.item(i - 1)[shared]) ++shared;
    num_prefixes_ += L - shared;
  }
  num_bits_ = std::max<uint64_t>(64, (static_cast<uint64_t>(num_prefixes_) * static_cast<uint64_t>(bits_per_prefix) + 63) / 64 * 64);
  bits_.assign(num_bits_ / 64, 0);
  for (int64_t i = 0; i < c.size(); ++i) {
    uint64_t h = kHashRoot;
    for (int32_t j = 0; j < L; ++j) {
      h = hash_extend(h, c.item(i)[j]);
      const uint64_t h2 = splitmix64(h) | 1u;
      for (int32_t k = 0; k < k_; ++k) {
        const uint64_t b = (h + static_cast<uint64_t>(k) * h2) % num_bits_;
        bits_[b >> 6] |= uint64_t{1} << (b & 63);
      }
    }
  }
}

int64_t HashBitmapIndex::root_state() const { return static_cast<int64_t>(kHashRoot); }

bool HashBitmapIndex::test(uint64_t h) const {
  const uint64_t h2 = splitmix64(h) | 1u;
  for (int32_t k = 0; k < k_; ++k) {
    const uint64_t b = (h + static_cast<uint64_t>(k) * h2) % num_bits_;
    if (!((bits_[b >> 6] >> (b & 63)) & 1u)) return false;
  }
  return true;
}

template <class T>
void HashBitmapIndex::mask_impl(const int64_t* states, int32_t n, int32_t /*step*/, T* lp, int32_t* valid, MaskPath* path) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int32_t i = 0; i < n; ++i) {
    T* row = lp + static_cast<size_t>(i) * static_cast<size_t>(vocab_);
    int32_t count = 0;
    for (int32_t v = 0; v < vocab_; ++v) {
      const bool keep = test(hash_extend(static_cast<uint64_t>(states[i]), v));
      row[v] = keep ? row[v] : kNegInf;
      count += keep;
    }
    if (valid) valid[i] = count;
    if (path) path[i] = MaskPath::hash;
  }
}
template void HashBitmapIndex::mask_impl(const int64_t*, int32_t, int32_t, float*, int32_t*, MaskPath*);
template void HashBitmapIndex::mask_impl(const int64_t*, int32_t, int32_t, double*, int32_t*, MaskPath*);

int64_t HashBitmapIndex::next_state(int64_t state, int32_t token, int32_t) const {
  return static_cast<int64_t>(hash_extend(static_cast<uint64_t>(state), token));
}

double HashBitmapIndex::expected_false_positive_rate() const {
  return std::pow(1.0 - std::exp(-static_cast<double>(k_) * static_cast<double>(num_prefixes_) / static_cast<double>(num_bits_)), k_);
}

nlohmann::json HashBitmapIndex::describe() const {
  return {{"impl", "hash_bitmap"}, {"bits", num_bits_}, {"hashes", k_}, {"prefixes", num_prefixes_},
          {"expected_fpr", expected_false_positive_rate()}, {"bytes", memory_bytes()}};
}

}  // namespace triescope
