#include "core/model/tree_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/common/error.h"

namespace triescope {

void tree_attention_check(const TreeAttentionArgs& a, const char* what) {
  TS_CHECK(a.num_queries >= 0, what << ": num_queries = " << a.num_queries << " is negative");
  TS_CHECK(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0,
           what << ": heads = " << a.heads << " must be a positive multiple of kv_heads = " << a.kv_heads);
  TS_CHECK(a.head_dim > 0, what << ": head_dim = " << a.head_dim << " must be > 0");
  TS_CHECK(a.capacity >= 0, what << ": capacity = " << a.capacity << " is negative");
  if (a.num_queries == 0) return;
  TS_CHECK(a.q && a.kv && a.indptr && a.out, what << ": null q, kv, indptr or out");
  TS_CHECK(a.indptr[0] == 0, what << ": indptr[0] = " << a.indptr[0] << ", must be 0");
  for (int32_t r = 0; r < a.num_queries; ++r) {
    const int32_t n = a.indptr[r + 1] - a.indptr[r];
    TS_CHECK(n >= 0, what << ": indptr[" << r + 1 << "] = " << a.indptr[r + 1] << " < indptr[" << r << "] = " << a.indptr[r]);
    TS_CHECK(n <= a.max_row, what << ": query " << r << " reads " << n << " slots, more than max_row = " << a.max_row);
  }
  TS_CHECK(a.indptr[a.num_queries] == 0 || a.slot_ids, what << ": null slot_ids");
}

void tree_attention_ref(const TreeAttentionArgs& a, std::vector<double>& out) {
  tree_attention_check(a, "tree_attention_ref");
  const int64_t hd = a.head_dim, row = int64_t{a.kv_heads} * hd, g = a.heads / a.kv_heads;
  out.assign(static_cast<size_t>(int64_t{a.num_queries} * a.heads * hd), 0.0);
  const float* K = a.kv;
  const float* V = a.kv + int64_t{a.capacity} * row;
  std::vector<double> s;
  for (int32_t r = 0; r < a.num_queries; ++r) {
    const int32_t beg = a.indptr[r], n = a.indptr[r + 1] - beg;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t slot = a.slot_ids[beg + i];
      TS_CHECK(slot >= 0 && slot < a.capacity, "tree_attention_ref: query " << r << " list index " << i << ": slot " << slot
                                                                            << " outside [0, " << a.capacity << ")");
    }
    if (n == 0) continue;
    s.resize(static_cast<size_t>(n));
    for (int32_t h = 0; h < a.heads; ++h) {
      const int64_t kvh = h / g;
      const float* qv = a.q + (int64_t{r} * a.heads + h) * hd;
      double mx = -std::numeric_limits<double>::infinity();
      for (int32_t i = 0; i < n; ++i) {
        const float* k = K + int64_t{a.slot_ids[beg + i]} * row + kvh * hd;
        double dot = 0.0;
        for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(qv[d]) * static_cast<double>(k[d]);
        s[static_cast<size_t>(i)] = dot * static_cast<double>(a.scale);
        mx = std::max(mx, s[static_cast<size_t>(i)]);
      }
      double sum = 0.0;
      for (auto& x : s) sum += (x = std::exp(x - mx));
      double* o = out.data() + (int64_t{r} * a.heads + h) * hd;
      for (int32_t i = 0; i < n; ++i) {
        const float* v = V + int64_t{a.slot_ids[beg + i]} * row + kvh * hd;
        const double p = s[static_cast<size_t>(i)] / sum;
        for (int64_t d = 0; d < hd; ++d) o[d] += p * static_cast<double>(v[d]);
      }
    }
  }
}

void tree_attention_host(const TreeAttentionArgs& a) {
  std::vector<double> out;
  tree_attention_ref(a, out);
  for (size_t i = 0; i < out.size(); ++i) a.out[i] = static_cast<float>(out[i]);
}

AncestorCsr ancestor_csr(const BitMask& mask) {
  AncestorCsr c;
  c.indptr.reserve(static_cast<size_t>(mask.rows) + 1);
  c.indptr.push_back(0);
  for (int32_t r = 0; r < mask.rows; ++r) {
    const uint64_t* w = mask.row(r);
    for (int32_t wi = 0; wi < mask.words_per_row; ++wi)
      for (uint64_t bits = w[wi]; bits; bits &= bits - 1) c.slot_ids.push_back(wi * 64 + __builtin_ctzll(bits));
    c.indptr.push_back(static_cast<int32_t>(c.slot_ids.size()));
    c.max_row = std::max(c.max_row, c.indptr.back() - c.indptr[c.indptr.size() - 2]);
  }
  return c;
}

namespace {
TreeAttentionKernel& registered() {
  static TreeAttentionKernel k;
  return k;
}
}  // namespace

void tree_attention_kernel_register(const TreeAttentionKernel& k) {
  TS_CHECK(k.name && k.workspace_bytes && k.launch && k.error_name, "tree_attention_kernel_register: incomplete kernel entry");
  registered() = k;
}

const TreeAttentionKernel* tree_attention_kernel() { return registered().launch ? &registered() : nullptr; }

}  // namespace triescope
