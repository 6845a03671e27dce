// The parts of one step's picture in an HTML report, beside the mask grid
// and the tree: the pass's position ids, the KV layout (slot -> node) and the
// step's records as recorded. Every string from the trace is escaped.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace_replay.h"

namespace triescope::cli {

// "node 7 \"dog\"" (the token's text when the trace has a vocabulary, else its
// id), plain text; "node 7" when `id` is not in `nodes`.
std::string node_text(const TraceReplay& t, const std::vector<TreeNode>& nodes, int32_t id);

// The pass's rows [row0, row1): query node and position id, rows in `marked` highlighted.
std::string positions_html(const std::string& title, const TraceReplay& t, const StepView& v, const ForwardView& f, int32_t row0,
                           int32_t row1, const std::set<int32_t>& marked);

// Slots [col0, col1) of `slot_to_node` (the layout a pass read): the node and
// its token in each, slots in `marked` highlighted.
std::string kv_layout_html(const std::string& title, const TraceReplay& t, const StepView& v, const std::vector<int32_t>& slot_to_node,
                           int32_t col0, int32_t col1, const std::set<int32_t>& marked);

// The records as JSON text (escaped), each cut at a bound a page can hold.
std::string raw_records_html(const std::string& title, const std::vector<nlohmann::json>& records);

}  // namespace triescope::cli
