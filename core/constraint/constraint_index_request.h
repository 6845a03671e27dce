// What a sample's STATIC constraint asks of its index, so the backend that
// runs the sample builds the index once, where it runs
// (BackendSpec::make_constraint_index, core/decode/backend.h): the CPU builds
// it with constraint_index_make (static_constraint.h), the cuda backend puts
// the VNTK index on the device (docs/architecture.md, "CUDA").
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/constraint/constraint_index.h"
#include "core/constraint/constraint_set.h"
#include "core/constraint/transition_matrix.h"

namespace triescope {

struct ConstraintIndexRequest {
  std::string impl = "vntk";  // the sample's constraint.impl: vntk, pointer_trie, ppv_exact, ppv_approx, hash_bitmap
  std::shared_ptr<const ConstraintSet> set;
  TransitionMatrixOptions matrix;  // constraint.dense_levels and constraint.layout (impl vntk)
  int32_t top_k = 50;              // constraint.top_k (impl ppv_approx)
  // constraint.ranking "sparse": the constraint ranks with the host
  // StaticStep over this index, which must then be a host VntkIndex.
  bool sparse_ranking = false;
};

// Builds the index a request asks for; errors name the constraint field.
using ConstraintIndexMaker = std::function<std::shared_ptr<ConstraintIndex>(const ConstraintIndexRequest& request)>;

}  // namespace triescope
