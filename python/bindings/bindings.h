// One function per area of the triescope._core module (module.cpp calls them).
#pragma once
#include <pybind11/pybind11.h>

namespace triescope::py {
void bind_trace(pybind11::module_& m);
void bind_check(pybind11::module_& m);
void bind_constraint(pybind11::module_& m);
void bind_hf(pybind11::module_& m);
void bind_engines(pybind11::module_& m);
}  // namespace triescope::py
