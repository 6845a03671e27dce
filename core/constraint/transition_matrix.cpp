#include "core/constraint/transition_matrix.h"

#include <algorithm>
#include <bit>

#include "core/common/error.h"

namespace triescope {

const char* csr_layout_name(CsrLayout l) { return l == CsrLayout::stacked ? "stacked" : "compact"; }

CsrLayout csr_layout_parse(const std::string& s, const std::string& where) {
  if (s == "stacked") return CsrLayout::stacked;
  if (s == "compact") return CsrLayout::compact;
  TS_FAIL(where << " must be \"stacked\" or \"compact\", got \"" << s << "\"");
}

namespace {

std::vector<uint32_t> rank_directory(const std::vector<uint64_t>& words) {
  std::vector<uint32_t> r(words.size());
  uint64_t acc = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    r[i] = static_cast<uint32_t>(acc);
    acc += static_cast<uint64_t>(std::popcount(words[i]));
  }
  return r;
}

void build_options_check(const ConstraintSet& c, const TransitionMatrixOptions& opt) {
  const int32_t L = c.length, V = c.vocab_size;
  const int64_t n = c.size();
  TS_CHECK(n >= 1 && L >= 1, "transition matrix: empty constraint set " << c.origin);
  TS_CHECK(opt.dense_levels >= 0 && opt.dense_levels <= 2, "transition matrix: dense_levels must be 0, 1 or 2, got " << opt.dense_levels);
  TS_CHECK(opt.dense_levels < L, "transition matrix: dense_levels " << opt.dense_levels << " must be < L = " << L << " (App. A.1.2: 0 <= d < L)");
  if (opt.dense_levels == 2) {
    const double bytes = static_cast<double>(V) * V * (opt.layout == CsrLayout::stacked ? 4.125 : 0.1875);
    TS_CHECK(bytes <= 2.5e9, "transition matrix: d = 2 with |V| = " << V << " needs " << bytes / 1e9
                                                                      << " GB of dense tables (App. B: (1/8 + K2)|V|^2); use d <= 1");
  }
  TS_CHECK(opt.layout == CsrLayout::stacked || n * static_cast<int64_t>(L) < (int64_t{1} << 32),
           "transition matrix: compact layout holds at most 2^32 edges");
  TS_CHECK(opt.layout == CsrLayout::compact || n * static_cast<int64_t>(L) < (int64_t{1} << 31),
           "transition matrix: stacked layout (int32 arrays, as the paper's) holds at most 2^31 edges");
}

// lcp[i]: first token where item i differs from item i - 1 (items are
// sorted and unique). Item i opens a new node at level l iff lcp[i] < l.
std::vector<int16_t> item_lcp(const ConstraintSet& c) {
  const int32_t L = c.length;
  const int64_t n = c.size();
  std::vector<int16_t> lcp(static_cast<size_t>(n));
  lcp[0] = -1;
  for (int64_t i = 1; i < n; ++i) {
    const int32_t* a = c.item(i - 1);
    const int32_t* b = c.item(i);
    int16_t j = 0;
    while (j < L && a[j] == b[j]) ++j;
    TS_CHECK(j < L, "transition matrix: " << c.origin << " is not sorted and unique at item " << i);
    lcp[static_cast<size_t>(i)] = j;
  }
  return lcp;
}

// [L + 2] first state of each level: level l holds one state per item with lcp < l.
std::vector<int64_t> level_starts(const std::vector<int16_t>& lcp, int32_t L) {
  std::vector<int64_t> level_start(static_cast<size_t>(L) + 2, 0);
  level_start[1] = 1;
  std::vector<int64_t> count(static_cast<size_t>(L) + 1, 0);  // count[j]: items with lcp == j (j = -1 -> index L)
  for (int16_t j : lcp) ++count[j < 0 ? static_cast<size_t>(L) : static_cast<size_t>(j)];
  int64_t below = count[static_cast<size_t>(L)];  // items with lcp < l, for l = 1 .. L
  for (int32_t l = 1; l <= L; ++l) {
    below += count[static_cast<size_t>(l) - 1];
    level_start[static_cast<size_t>(l) + 1] = level_start[static_cast<size_t>(l)] + below;
  }
  return level_start;
}

// Children counts (children[R], R: states with rows) and edge tokens
// (tokens[E]: edge e enters state e + 1), one pass per level; fills max_branch.
void count_children(const ConstraintSet& c, const std::vector<int16_t>& lcp, TransitionMatrix& tm, std::vector<int32_t>& tokens,
                    std::vector<uint32_t>& children) {
  const int32_t L = c.length;
  const int64_t n = c.size();
  tm.max_branch.assign(static_cast<size_t>(L), 0);
  for (int32_t l = 1; l <= L; ++l) {
    int64_t parent = tm.level_start[static_cast<size_t>(l) - 1] - 1;
    int64_t child = tm.level_start[static_cast<size_t>(l)];
    for (int64_t i = 0; i < n; ++i) {
      const int16_t j = lcp[static_cast<size_t>(i)];
      if (j >= l) continue;
      if (j < l - 1) ++parent;
      ++children[static_cast<size_t>(parent)];
      tokens[static_cast<size_t>(child - 1)] = c.item(i)[l - 1];
      ++child;
    }
    for (int64_t s = tm.level_start[static_cast<size_t>(l) - 1]; s < tm.level_start[static_cast<size_t>(l)]; ++s)
      tm.max_branch[static_cast<size_t>(l) - 1] = std::max<int32_t>(tm.max_branch[static_cast<size_t>(l) - 1], static_cast<int32_t>(children[static_cast<size_t>(s)]));
  }
}

// The sparse levels' CSR in tm.layout: row pointers over the R states with
// rows, and the edges' tokens (stacked: interleaved with the next state).
void csr_fill(TransitionMatrix& tm, const std::vector<int32_t>& tokens, const std::vector<uint32_t>& children) {
  const int64_t S = tm.level_start.back(), E = S - 1;
  const int64_t R = static_cast<int64_t>(children.size());
  if (tm.layout == CsrLayout::stacked) {
    tm.row_ptr.assign(static_cast<size_t>(S) + 1, static_cast<int32_t>(E));
    int64_t acc = 0;
    for (int64_t s = 0; s < R; ++s) {
      tm.row_ptr[static_cast<size_t>(s)] = static_cast<int32_t>(acc);
      acc += children[static_cast<size_t>(s)];
    }
    tm.edges.resize(static_cast<size_t>(E) * 2);
    for (int64_t e = 0; e < E; ++e) {
      tm.edges[static_cast<size_t>(e) * 2] = tokens[static_cast<size_t>(e)];
      tm.edges[static_cast<size_t>(e) * 2 + 1] = static_cast<int32_t>(e + 1);
    }
  } else {
    tm.row_ptr_compact.assign(static_cast<size_t>(R) + 2, static_cast<uint32_t>(E));
    uint64_t acc = 0;
    for (int64_t s = 0; s < R; ++s) {
      tm.row_ptr_compact[static_cast<size_t>(s)] = static_cast<uint32_t>(acc);
      acc += children[static_cast<size_t>(s)];
    }
    if (tm.vocab_size <= 65536) tm.cols16.assign(tokens.begin(), tokens.end());
    else tm.cols32.assign(tokens.begin(), tokens.end());
  }
}

// Dense levels (App. A.1.2): bitmask of the valid length-1 and length-2
// prefixes, with their next states (stacked) or rank directories (compact).
// Reads the CSR, so runs after csr_fill.
void dense_fill(TransitionMatrix& tm, const std::vector<int32_t>& tokens) {
  const int32_t V = tm.vocab_size;
  const bool stacked = tm.layout == CsrLayout::stacked;
  tm.words_per_row = (V + 63) / 64;
  const size_t wpr = static_cast<size_t>(tm.words_per_row);
  if (tm.dense_levels >= 1) {
    tm.dense_mask1.assign(wpr, 0);
    if (stacked) tm.dense_states1.assign(static_cast<size_t>(V), 0);
    for (int64_t s = 1; s < tm.level_start[2]; ++s) {
      const int32_t t = tokens[static_cast<size_t>(s) - 1];
      tm.dense_mask1[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
      if (stacked) tm.dense_states1[static_cast<size_t>(t)] = static_cast<int32_t>(s);
    }
    if (!stacked) tm.dense_rank1 = rank_directory(tm.dense_mask1);
  }
  if (tm.dense_levels >= 2) {
    tm.dense_mask2.assign(static_cast<size_t>(V) * wpr, 0);
    if (stacked) tm.dense_states2.assign(static_cast<size_t>(V) * static_cast<size_t>(V), 0);
    for (int64_t p = 1; p < tm.level_start[2]; ++p) {
      const size_t t1 = static_cast<size_t>(tokens[static_cast<size_t>(p) - 1]);
      for (int64_t e = tm.row_begin(p); e < tm.row_end(p); ++e) {
        const int32_t t2 = tokens[static_cast<size_t>(e)];
        tm.dense_mask2[t1 * wpr + (static_cast<size_t>(t2) >> 6)] |= uint64_t{1} << (t2 & 63);
        if (stacked) tm.dense_states2[t1 * static_cast<size_t>(V) + static_cast<size_t>(t2)] = static_cast<int32_t>(e + 1);
      }
    }
    if (!stacked) tm.dense_rank2 = rank_directory(tm.dense_mask2);
  }
}

}  // namespace

TransitionMatrix TransitionMatrix::build(const ConstraintSet& c, TransitionMatrixOptions opt) {
  build_options_check(c, opt);
  const int32_t L = c.length;
  TransitionMatrix tm;
  tm.vocab_size = c.vocab_size;
  tm.length = L;
  tm.dense_levels = opt.dense_levels;
  tm.layout = opt.layout;
  tm.num_items = c.size();
  std::vector<int16_t> lcp = item_lcp(c);
  tm.level_start = level_starts(lcp, L);
  const int64_t E = tm.level_start.back() - 1;
  const int64_t R = tm.level_start[static_cast<size_t>(L)];  // states that have rows (levels 0 .. L-1)
  std::vector<int32_t> tokens(static_cast<size_t>(E));
  std::vector<uint32_t> children(static_cast<size_t>(R), 0);
  count_children(c, lcp, tm, tokens, children);
  lcp = {};
  csr_fill(tm, tokens, children);
  children = {};
  dense_fill(tm, tokens);
  return tm;
}

int32_t TransitionMatrix::level_of(int64_t state) const {
  const auto it = std::upper_bound(level_start.begin(), level_start.end(), state);
  return static_cast<int32_t>(it - level_start.begin()) - 1;
}

int64_t TransitionMatrix::row_begin(int64_t s) const {
  if (layout == CsrLayout::stacked) return row_ptr[static_cast<size_t>(s)];
  const int64_t R = static_cast<int64_t>(row_ptr_compact.size()) - 2;
  return row_ptr_compact[static_cast<size_t>(std::min(s, R))];
}

int64_t TransitionMatrix::row_end(int64_t s) const {
  if (layout == CsrLayout::stacked) return row_ptr[static_cast<size_t>(s) + 1];
  const int64_t R = static_cast<int64_t>(row_ptr_compact.size()) - 2;
  return row_ptr_compact[static_cast<size_t>(std::min(s, R)) + 1];
}

int32_t TransitionMatrix::edge_token(int64_t e) const {
  if (layout == CsrLayout::stacked) return edges[static_cast<size_t>(e) * 2];
  return cols16.empty() ? static_cast<int32_t>(cols32[static_cast<size_t>(e)]) : cols16[static_cast<size_t>(e)];
}

TransitionMatrix::Memory TransitionMatrix::memory() const {
  Memory m;
  m.row_ptr = static_cast<int64_t>(row_ptr.size() * sizeof(int32_t) + row_ptr_compact.size() * sizeof(uint32_t));
  if (layout == CsrLayout::stacked) {
    m.cols = static_cast<int64_t>(edges.size() / 2 * sizeof(int32_t));
    m.next = m.cols;
  } else {
    m.cols = static_cast<int64_t>(cols16.size() * sizeof(uint16_t) + cols32.size() * sizeof(uint32_t));
  }
  m.dense_mask = static_cast<int64_t>((dense_mask1.size() + dense_mask2.size()) * sizeof(uint64_t));
  m.dense_states = static_cast<int64_t>((dense_states1.size() + dense_states2.size()) * sizeof(int32_t));
  m.dense_rank = static_cast<int64_t>((dense_rank1.size() + dense_rank2.size()) * sizeof(uint32_t));
  return m;
}

nlohmann::json TransitionMatrix::memory_json() const {
  const Memory m = memory();
  const int64_t S = num_states();
  const double per_row = 4.0;
  const double per_edge = layout == CsrLayout::stacked ? 8.0 : (cols16.empty() ? 4.0 : 2.0);
  nlohmann::json levels = nlohmann::json::array();
  for (int32_t l = 0; l <= length; ++l) {
    const int64_t nl = level_size(l);
    const bool has_rows = layout == CsrLayout::stacked || l < length;
    const double bytes = nl * ((has_rows ? per_row : 0.0) + (l >= 1 ? per_edge : 0.0));
    levels.push_back({{"level", l}, {"nodes", nl}, {"max_branch", l < length ? max_branch[static_cast<size_t>(l)] : 0},
                      {"csr_bytes", static_cast<int64_t>(bytes)}, {"dense", l >= 1 && l <= dense_levels}});
  }
  return {{"layout", csr_layout_name(layout)},
          {"dense_levels", dense_levels},
          {"items", num_items},
          {"states", S},
          {"edges", num_edges()},
          {"bytes", {{"row_ptr", m.row_ptr}, {"cols", m.cols}, {"next", m.next}, {"dense_mask", m.dense_mask},
                     {"dense_states", m.dense_states}, {"dense_rank", m.dense_rank}, {"total", m.total()}}},
          {"csr_bytes_per_node", static_cast<double>(m.row_ptr + m.cols + m.next) / static_cast<double>(S)},
          {"bytes_per_item", static_cast<double>(m.total()) / static_cast<double>(num_items)},
          {"mb_per_1m_items", static_cast<double>(m.total()) / static_cast<double>(num_items)},
          {"levels", levels}};
}

nlohmann::json TransitionMatrix::describe() const {
  return {{"layout", csr_layout_name(layout)}, {"dense_levels", dense_levels}, {"vocab_size", vocab_size}, {"length", length},
          {"items", num_items}, {"states", num_states()}, {"max_branch", max_branch}, {"bytes", memory().total()}};
}

}  // namespace triescope
