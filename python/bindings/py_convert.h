// Python <-> core conversions shared by the bindings. Every converter takes
// the argument's name and raises a Python exception naming it: TypeError
// for a wrong type or dtype, triescope.Error (a ValueError) for a wrong
// shape or value. torch tensors are read through .detach().cpu().numpy().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/mask/bit_mask.h"

namespace triescope::py {

namespace pyb = pybind11;

nlohmann::json to_json(pyb::handle obj, const std::string& name);
pyb::object from_json(const nlohmann::json& j);

// A torch tensor as a numpy array (shares memory for CPU tensors); anything else unchanged.
pyb::object numpy_of(pyb::handle obj);
// A 1-D sequence of integers: a list/tuple of ints, an integer numpy array or tensor.
std::vector<int64_t> int_vector(pyb::handle obj, const std::string& name);
std::vector<int32_t> int32_vector(pyb::handle obj, const std::string& name);
// `v` narrowed to 32 bits, or triescope.Error (a ValueError) naming it. Integers
// past int64 are an OverflowError wherever they are read.
int32_t int32_checked(int64_t v, const std::string& name);
// A 2-D integer array (or list of equal-length int lists) -> rows.
std::vector<std::vector<int64_t>> int_rows(pyb::handle obj, const std::string& name);
// A 2-D bool/uint8 array or tensor [rows x cols] of 0/1 -> BitMask.
BitMask bit_mask(pyb::handle obj, const std::string& name);
// A 2-D float32 array or tensor, C-contiguous and writable (shares memory).
pyb::array_t<float> float_rows_inplace(pyb::handle obj, const std::string& name);
// A 2-D float array or tensor (any float dtype), copied to float32.
pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast> float_rows(pyb::handle obj, const std::string& name);
// The numpy dtype and shape of `a`, for messages: "float32 array of shape (2, 3)".
std::string describe_array(const pyb::array& a);

}  // namespace triescope::py
