#include "core/model/tree_attention_cascade.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/common/error.h"

namespace triescope {

int32_t tree_attention_cascade_tile_rows(int32_t head_dim) {
  const int32_t hdp = head_dim <= 32 ? 32 : head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256;
  return hdp <= 64 ? 64 : hdp == 128 ? 32 : 16;
}

TreeAttentionCascade TreeAttentionCascadeTable::view(const int32_t* base) const {
  TreeAttentionCascade c;
  c.items = items;
  c.members = members;
  c.tile_rows = tile_rows;
  c.private_max_row = private_max_row;
  c.private_entries = private_slot_count;
  c.item_slot_reads = item_slot_reads;
  if (items == 0) return c;
  c.item = base + item;
  c.shared_slots = base + shared_slots;
  c.member = base + member;
  c.query_part_ptr = base + query_part_ptr;
  c.query_parts = base + query_parts;
  c.private_ptr = base + private_ptr;
  c.private_slots = base + private_slots;
  return c;
}

namespace {
// A reader set: the queries that read a slot, as a chain (parent set plus its
// last query), so a refinement step is one lookup and the set's members are
// a walk up the chain.
struct ReaderSet {
  int32_t parent, query, size;
  int64_t slots = 0;  // slots whose readers are exactly this set (after all queries)
};
// Partition refinement: after query r, slots with the same set id are read
// by exactly the same queries among 0..r. Set 0 is "no reader yet". False
// when the sets pass the memory bound (not tree-like).
bool refine_reader_sets(const TreeAttentionArgs& a, std::vector<ReaderSet>& sets, std::vector<int32_t>& set_of) {
  const int32_t q = a.num_queries;
  const int64_t listed = a.indptr[q];
  sets = {{-1, -1, 0}};
  set_of.assign(static_cast<size_t>(a.capacity), 0);
  // Refinement makes a set per (query, run of one set on its list). A trie
  // whose beams fork off each other at many depths makes O(q^2) of them yet
  // ends with at most 2q segments; a causal prefill makes O(q^2) that all end
  // one slot long. So the bound is on memory, not on shape (the shared-segment
  // rule decides): one set per 8 listed slots, at least 4 q + 64.
  const size_t most_sets = std::max<size_t>(4 * static_cast<size_t>(q) + 64, static_cast<size_t>(listed) / 8);
  std::unordered_map<int32_t, int32_t> next;  // this query: old set -> refined set
  for (int32_t r = 0; r < q; ++r) {
    next.clear();
    int32_t last_old = -1, last_new = -1;
    for (int32_t j = a.indptr[r]; j < a.indptr[r + 1]; ++j) {
      int32_t& s = set_of[static_cast<size_t>(a.slot_ids[j])];
      if (s != last_old) {  // runs of one set are the rule in a trie: one lookup per run
        auto [it, fresh] = next.try_emplace(s, static_cast<int32_t>(sets.size()));
        if (fresh) {
          sets.push_back({s, r, sets[static_cast<size_t>(s)].size + 1});
          if (sets.size() > most_sets) return false;
        }
        last_old = s;
        last_new = it->second;
      }
      s = last_new;
    }
  }
  return true;
}
}  // namespace

TreeAttentionCascadeTable tree_attention_cascade_build(const TreeAttentionArgs& a, int32_t tile_rows, int32_t target_blocks) {
  TS_CHECK(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0 && tile_rows > 0,
           "tree_attention_cascade_build: heads = " << a.heads << ", kv_heads = " << a.kv_heads << ", tile_rows = " << tile_rows);
  TreeAttentionCascadeTable t;
  const int32_t q = a.num_queries, group = a.heads / a.kv_heads;
  if (q < 2 || group > tile_rows || a.capacity <= 0) return t;
  TS_CHECK(a.indptr && a.indptr[0] == 0 && (a.indptr[q] == 0 || a.slot_ids), "tree_attention_cascade_build: null or bad indptr / slot_ids");
  for (int32_t r = 0; r < q; ++r)
    TS_CHECK(a.indptr[r + 1] >= a.indptr[r], "tree_attention_cascade_build: indptr[" << r + 1 << "] < indptr[" << r << "]");
  const int64_t listed = a.indptr[q];
  for (int64_t j = 0; j < listed; ++j)
    if (a.slot_ids[j] < 0 || a.slot_ids[j] >= a.capacity) return t;

  std::vector<ReaderSet> sets;
  std::vector<int32_t> set_of;
  if (!refine_reader_sets(a, sets, set_of)) return t;
  for (int32_t s : set_of) ++sets[static_cast<size_t>(s)].slots;
  auto shared = [&](int32_t s) {
    const ReaderSet& rs = sets[static_cast<size_t>(s)];
    return rs.size >= 2 && rs.slots >= kCascadeMinSegment;
  };

  // Segments in order of their first slot; each one's slots ascending.
  std::vector<int32_t> seg_of_set(sets.size(), -1), seg_set;
  std::vector<std::vector<int32_t>> seg_slots;
  for (int32_t slot = 0; slot < a.capacity; ++slot) {
    const int32_t s = set_of[static_cast<size_t>(slot)];
    if (!shared(s)) continue;
    int32_t& g = seg_of_set[static_cast<size_t>(s)];
    if (g < 0) {
      g = static_cast<int32_t>(seg_slots.size());
      seg_slots.emplace_back();
      seg_set.push_back(s);
    }
    seg_slots[static_cast<size_t>(g)].push_back(slot);
  }
  if (seg_slots.empty()) return t;

  // Chunk length: about target_blocks blocks of items x KV heads in all.
  const int32_t per_tile = tile_rows / group;
  int64_t work = 0;  // slots x tiles x KV heads
  for (size_t g = 0; g < seg_slots.size(); ++g) {
    const int64_t tiles = (sets[static_cast<size_t>(seg_set[g])].size + per_tile - 1) / per_tile;
    work += static_cast<int64_t>(seg_slots[g].size()) * tiles * a.kv_heads;
  }
  int64_t chunk = std::max<int64_t>(64, (work + std::max(target_blocks, 1) - 1) / std::max(target_blocks, 1));
  chunk = (chunk + 31) / 32 * 32;

  std::vector<int32_t> item, shared_slots, member;
  std::vector<int32_t> readers;
  for (size_t g = 0; g < seg_slots.size(); ++g) {
    readers.clear();
    for (int32_t s = seg_set[g]; s != 0; s = sets[static_cast<size_t>(s)].parent) readers.push_back(sets[static_cast<size_t>(s)].query);
    std::reverse(readers.begin(), readers.end());
    const int32_t base = static_cast<int32_t>(shared_slots.size()), len = static_cast<int32_t>(seg_slots[g].size());
    shared_slots.insert(shared_slots.end(), seg_slots[g].begin(), seg_slots[g].end());
    t.shared_slot_count += len;
    for (int32_t lo = 0; lo < len; lo += static_cast<int32_t>(chunk)) {
      const int32_t hi = static_cast<int32_t>(std::min<int64_t>(len, lo + chunk));
      for (size_t m0 = 0; m0 < readers.size(); m0 += static_cast<size_t>(per_tile)) {
        const size_t m1 = std::min(readers.size(), m0 + static_cast<size_t>(per_tile));
        item.insert(item.end(), {base + lo, base + hi, static_cast<int32_t>(member.size()), static_cast<int32_t>(member.size() + m1 - m0)});
        member.insert(member.end(), readers.begin() + static_cast<std::ptrdiff_t>(m0), readers.begin() + static_cast<std::ptrdiff_t>(m1));
        t.item_slot_reads += hi - lo;
      }
    }
  }
  // Each query's member entries, and its slots outside every segment.
  std::vector<int32_t> query_part_ptr(static_cast<size_t>(q) + 1, 0), query_parts(member.size());
  for (int32_t r : member) ++query_part_ptr[static_cast<size_t>(r) + 1];
  for (int32_t r = 0; r < q; ++r) query_part_ptr[static_cast<size_t>(r) + 1] += query_part_ptr[static_cast<size_t>(r)];
  {
    std::vector<int32_t> fill(query_part_ptr.begin(), query_part_ptr.end() - 1);
    for (size_t e = 0; e < member.size(); ++e) query_parts[static_cast<size_t>(fill[static_cast<size_t>(member[e])]++)] = static_cast<int32_t>(e);
  }
  std::vector<int32_t> private_ptr = {0}, private_slots;
  for (int32_t r = 0; r < q; ++r) {
    for (int32_t j = a.indptr[r]; j < a.indptr[r + 1]; ++j)
      if (!shared(set_of[static_cast<size_t>(a.slot_ids[j])])) private_slots.push_back(a.slot_ids[j]);
    private_ptr.push_back(static_cast<int32_t>(private_slots.size()));
    t.private_max_row = std::max(t.private_max_row, private_ptr.back() - private_ptr[private_ptr.size() - 2]);
  }
  t.private_slot_count = static_cast<int64_t>(private_slots.size());

  t.items = static_cast<int32_t>(item.size() / 4);
  t.members = static_cast<int32_t>(member.size());
  t.tile_rows = tile_rows;
  auto append = [&](size_t& at, const std::vector<int32_t>& v) {
    at = t.table.size();
    t.table.insert(t.table.end(), v.begin(), v.end());
  };
  append(t.item, item);
  append(t.shared_slots, shared_slots);
  append(t.member, member);
  append(t.query_part_ptr, query_part_ptr);
  append(t.query_parts, query_parts);
  append(t.private_ptr, private_ptr);
  append(t.private_slots, private_slots);
  return t;
}

namespace {
// One partial softmax state in double: running max, sum of exp, weighted V.
struct PartState {
  double m = -std::numeric_limits<double>::infinity(), l = 0.0;
  std::vector<double> acc;
};

// Attends query r, head h to `n` slots (two passes, max first, as the twin).
PartState part_attend(const TreeAttentionArgs& a, int32_t r, int32_t h, const int32_t* slots, int32_t n) {
  const int64_t hd = a.head_dim, row = int64_t{a.kv_heads} * hd, kvh = h / (a.heads / a.kv_heads);
  PartState p;
  p.acc.assign(static_cast<size_t>(hd), 0.0);
  const float* qv = a.q + (int64_t{r} * a.heads + h) * hd;
  std::vector<double> s(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const float* k = a.kv + int64_t{slots[i]} * row + kvh * hd;
    double dot = 0.0;
    for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(qv[d]) * static_cast<double>(k[d]);
    s[static_cast<size_t>(i)] = dot * static_cast<double>(a.scale);
    p.m = std::max(p.m, s[static_cast<size_t>(i)]);
  }
  for (int32_t i = 0; i < n; ++i) {
    const double w = std::exp(s[static_cast<size_t>(i)] - p.m);
    p.l += w;
    const float* v = a.kv + int64_t{a.capacity} * row + int64_t{slots[i]} * row + kvh * hd;
    for (int64_t d = 0; d < hd; ++d) p.acc[static_cast<size_t>(d)] += w * static_cast<double>(v[d]);
  }
  return p;
}
}  // namespace

void tree_attention_cascade_ref(const TreeAttentionArgs& a, std::vector<double>& out) {
  tree_attention_check(a, "tree_attention_cascade_ref");
  const TreeAttentionCascade& c = a.cascade;
  TS_CHECK(c.items > 0 && c.item && c.shared_slots && c.member && c.query_part_ptr && c.query_parts && c.private_ptr && c.private_slots,
           "tree_attention_cascade_ref: no cascade (items = " << c.items << ")");
  const int32_t q = a.num_queries;
  // Coverage: each query's private slots and items' chunks are its list.
  std::vector<std::vector<int32_t>> item_of(static_cast<size_t>(q));  // the item of each member entry of a query
  for (int32_t it = 0; it < c.items; ++it)
    for (int32_t e = c.item[4 * it + 2]; e < c.item[4 * it + 3]; ++e) {
      TS_CHECK(c.member[e] >= 0 && c.member[e] < q, "tree_attention_cascade_ref: member entry " << e << " names query " << c.member[e]);
      TS_CHECK((c.item[4 * it + 3] - c.item[4 * it + 2]) * (a.heads / a.kv_heads) <= c.tile_rows,
               "tree_attention_cascade_ref: item " << it << " holds more than tile_rows = " << c.tile_rows << " query heads");
    }
  for (int32_t r = 0; r < q; ++r) {
    std::vector<int32_t> got(c.private_slots + c.private_ptr[r], c.private_slots + c.private_ptr[r + 1]);
    for (int32_t k = c.query_part_ptr[r]; k < c.query_part_ptr[r + 1]; ++k) {
      const int32_t e = c.query_parts[k];
      TS_CHECK(c.member[e] == r, "tree_attention_cascade_ref: query " << r << " lists member entry " << e << " of query " << c.member[e]);
      int32_t it = 0;
      while (!(c.item[4 * it + 2] <= e && e < c.item[4 * it + 3])) ++it;
      got.insert(got.end(), c.shared_slots + c.item[4 * it], c.shared_slots + c.item[4 * it + 1]);
    }
    std::vector<int32_t> want(a.slot_ids + a.indptr[r], a.slot_ids + a.indptr[r + 1]);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    TS_CHECK(got == want, "tree_attention_cascade_ref: query " << r << ": the cascade covers " << got.size() << " slots, its list "
                                                                << want.size() << " (or other ones)");
  }
  const int64_t hd = a.head_dim;
  std::vector<std::vector<PartState>> parts(static_cast<size_t>(q) * a.heads);  // [query x head] its partial states
  for (int32_t r = 0; r < q; ++r)
    for (int32_t h = 0; h < a.heads; ++h)
      parts[static_cast<size_t>(r * a.heads + h)].push_back(
          part_attend(a, r, h, c.private_slots + c.private_ptr[r], c.private_ptr[r + 1] - c.private_ptr[r]));
  for (int32_t it = 0; it < c.items; ++it)
    for (int32_t e = c.item[4 * it + 2]; e < c.item[4 * it + 3]; ++e)
      for (int32_t h = 0; h < a.heads; ++h)
        parts[static_cast<size_t>(c.member[e] * a.heads + h)].push_back(
            part_attend(a, c.member[e], h, c.shared_slots + c.item[4 * it], c.item[4 * it + 1] - c.item[4 * it]));
  // The log-sum-exp merge (FlashInfer merge_state): rescale every part to the
  // common max M, add, normalise once. A part that saw no slot has m = -inf.
  out.assign(static_cast<size_t>(int64_t{q} * a.heads * hd), 0.0);
  for (size_t oh = 0; oh < parts.size(); ++oh) {
    double M = -std::numeric_limits<double>::infinity();
    for (const auto& p : parts[oh]) M = std::max(M, p.m);
    if (M == -std::numeric_limits<double>::infinity()) continue;  // an empty list gives zeros
    double L = 0.0;
    std::vector<double> A(static_cast<size_t>(hd), 0.0);
    for (const auto& p : parts[oh]) {
      if (p.l == 0.0) continue;
      const double f = std::exp(p.m - M);
      L += p.l * f;
      for (int64_t d = 0; d < hd; ++d) A[static_cast<size_t>(d)] += p.acc[static_cast<size_t>(d)] * f;
    }
    for (int64_t d = 0; d < hd; ++d) out[oh * static_cast<size_t>(hd) + static_cast<size_t>(d)] = A[static_cast<size_t>(d)] / L;
  }
}

}  // namespace triescope
