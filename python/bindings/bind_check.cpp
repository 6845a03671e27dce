// triescope.check: core/analysis/mask_check.h, the function `triescope check` runs.
#include <filesystem>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "python/bindings/bindings.h"
#include "python/bindings/py_convert.h"
#include "core/analysis/mask_check.h"
#include "core/common/error.h"
#include "core/trace/trace.h"

namespace triescope::py {

void bind_check(pyb::module_& m) {
  pyb::class_<MaskViolation>(m, "Violation", "One mask bit or position id that breaks its rule.")
      .def_readonly("step", &MaskViolation::step)
      .def_readonly("phase", &MaskViolation::phase)
      .def_readonly("pass_name", &MaskViolation::pass,
                    "The pass: \"\" (the target's forward), \"draft_forward\" or \"draft_forwards[i]\" (the draft model's).")
      .def_readonly("row", &MaskViolation::row, "Row of the forward pass.")
      .def_readonly("query", &MaskViolation::query, "The row's node (-1 in the batch layout).")
      .def_readonly("slot", &MaskViolation::slot, "The column at fault (-1 for a position id).")
      .def_readonly("slot_node", &MaskViolation::slot_node, "The node in that slot (-1: free or unknown).")
      .def_property_readonly("fault", [](const MaskViolation& v) { return std::string(mask_fault_name(v.fault)); },
                             "missing self bit, missing ancestor bit, sees a sibling's slot, sees a descendant's slot, "
                             "sees another branch's slot, sees a slot no node holds, wrong position id, wrong slot written")
      .def_readonly("expected", &MaskViolation::expected)
      .def_readonly("found", &MaskViolation::found)
      .def("__str__", &MaskViolation::describe)
      .def("__repr__", [](const MaskViolation& v) { return "<Violation " + v.describe() + ">"; });

  pyb::class_<MaskCheckReport>(m, "CheckReport", "What check() found: ok, counts, the first violations by step.")
      .def_readonly("layout", &MaskCheckReport::layout, "\"tree\" (the ancestor rule) or \"copies\" (batch layout).")
      .def_readonly("passes", &MaskCheckReport::passes)
      .def_readonly("rows", &MaskCheckReport::rows)
      .def_readonly("violation_count", &MaskCheckReport::violation_count)
      .def_readonly("violations", &MaskCheckReport::violations)
      .def_readonly("summary_problems", &MaskCheckReport::summary_problems,
                    "The summary's counters that disagree with the records, or its absence, one line each.")
      .def_property_readonly("ok", &MaskCheckReport::ok)
      .def("__bool__", &MaskCheckReport::ok);

  m.def(
      "check",
      [](const std::filesystem::path& path, int64_t limit) {
        TS_CHECK(limit >= 0, "limit: must be >= 0, got " << limit);
        // Streamed, as `triescope check`: memory bounded by a record and the tree.
        return mask_check_trace(TraceReplay::open(path.string()), static_cast<size_t>(limit));
      },
      pyb::arg("path"), pyb::arg("limit") = 20,
      "Checks every recorded mask row and position id of the trace at `path` against the ancestor rule (the copy "
      "layout for batch_beam_search traces); the same function as `triescope check`. The report keeps the first "
      "`limit` violations.");
}

}  // namespace triescope::py
