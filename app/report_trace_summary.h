// The summary table every HTML report starts with: what each trace is
// (file, algorithm, backend, model, steps), read from its header; a column
// per trace (A and B in a diff).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/trace/trace_replay.h"

namespace triescope::cli {

struct SummaryColumn {
  std::string heading;  // "" for a single trace, "A", "B"
  std::string path;
  const TraceReplay* trace = nullptr;
};

// `extra`: (label, value) rows after the traces' own, one value each (plain text).
std::string trace_summary_html(const std::vector<SummaryColumn>& columns, const std::vector<std::pair<std::string, std::string>>& extra);

}  // namespace triescope::cli
