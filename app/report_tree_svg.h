// The tree around one node as inline SVG, the inspector's trie view cut to
// what a report is about: the node's ancestors (root first; a long path
// elided in the middle), its siblings and its children, each box labelled
// with its token (the vocabulary's text when the trace has one), id,
// position and slot, coloured by status.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "core/trace/trace_replay.h"

namespace triescope::cli {

// `focus`: the node (thick outline, the inspector's selection blue);
// `marked`: other nodes to outline (dashed gold, the inspector's cell
// highlight: the nodes in a wrongly set or missing cell's slot). "" when focus is no node.
std::string tree_around_svg(const TraceReplay& t, const StepView& v, int32_t focus, const std::set<int32_t>& marked);

}  // namespace triescope::cli
