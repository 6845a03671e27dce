// Both precisions of ConstraintIndex::mask from one template: a derived
// index defines (privately, with this base a friend)
//   template <class T>
//   void mask_impl(const int64_t* states, int32_t n, int32_t step, T* lp, int32_t* valid, MaskPath* path);
// and derives from MaskBothPrecisions<itself>.
#pragma once
#include <cstdint>

#include "core/constraint/constraint_index.h"

namespace triescope {

template <class Derived>
class MaskBothPrecisions : public ConstraintIndex {
 public:
  void mask(const int64_t* states, int32_t n, int32_t step, float* lp, int32_t* valid, MaskPath* path) final {
    static_cast<Derived&>(*this).mask_impl(states, n, step, lp, valid, path);
  }
  void mask(const int64_t* states, int32_t n, int32_t step, double* lp, int32_t* valid, MaskPath* path) final {
    static_cast<Derived&>(*this).mask_impl(states, n, step, lp, valid, path);
  }
};

}  // namespace triescope
