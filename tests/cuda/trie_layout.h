// bench_tree_attention's trie layout as ancestor lists: b beams below a
// P-slot prompt, t private slots each; query i reads [0, P) and
// [P + i t, P + (i + 1) t). Unique K/V = P + b t slots.
#pragma once
#include <cstdint>

#include "core/model/tree_attention.h"

namespace triescope::testing {

inline AncestorCsr trie_layout_csr(int32_t P, int32_t b, int32_t t) {
  AncestorCsr csr;
  csr.indptr = {0};
  for (int32_t i = 0; i < b; ++i) {
    for (int32_t s = 0; s < P; ++s) csr.slot_ids.push_back(s);
    for (int32_t k = 0; k < t; ++k) csr.slot_ids.push_back(P + i * t + k);
    csr.indptr.push_back(static_cast<int32_t>(csr.slot_ids.size()));
  }
  csr.max_row = b > 0 ? P + t : 0;
  return csr;
}

}  // namespace triescope::testing
