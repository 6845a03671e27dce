#include <pybind11/pybind11.h>

#include "python/bindings/bindings.h"
#include "core/common/error.h"
#include "core/common/version.h"
#include "core/trace/trace.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "TrieScope's C++ core: trace recording and reading, the mask checker, STATIC's constraint index, "
            "and the replay of a Hugging Face generate() run (docs/python.md).";
  // Everything core/ rejects (triescope::Error) arrives as triescope.Error, a ValueError.
  pybind11::register_exception<triescope::Error>(m, "Error", PyExc_ValueError);
  m.attr("TRACE_FORMAT") = triescope::kTraceFormat;
  m.attr("TRACE_VERSION") = triescope::kTraceVersion;
  m.attr("__version__") = TRIESCOPE_VERSION;  // what `triescope --version` prints (core/common/version.h)
  triescope::py::bind_trace(m);
  triescope::py::bind_check(m);
  triescope::py::bind_constraint(m);
  triescope::py::bind_hf(m);
  triescope::py::bind_engines(m);
}
