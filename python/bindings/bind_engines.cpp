// What the engine adapters (python/triescope/engines) need from C++: the
// iteration order of a libstdc++ std::unordered_set, which llama.cpp
// 0.3.36 keeps a batch token's seq ids in (src/llama-batch.cpp,
// llama_batch_ext::token::seq_ids), so the "first" seq id its mask rule
// reads is this order's first, not the caller's.
#include <cstdint>
#include <unordered_set>
#include <vector>

#include <pybind11/stl.h>

#include "python/bindings/bindings.h"
#include "python/bindings/py_convert.h"

namespace triescope::py {

void bind_engines(pyb::module_& m) {
  m.def(
      "unordered_set_order",
      [](const std::vector<int32_t>& ids) {
        std::unordered_set<int32_t> set;
        for (int32_t id : ids) set.insert(id);
        return std::vector<int32_t>(set.begin(), set.end());
      },
      pyb::arg("ids"),
      "The order a libstdc++ std::unordered_set<int32_t> filled with `ids` (in that order) iterates in: the order "
      "llama.cpp 0.3.36 hands a batch token's seq ids to its mask rule (docs/engines.md).");
}

}  // namespace triescope::py
