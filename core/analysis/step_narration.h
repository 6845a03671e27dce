// A step told in a few plain sentences (no Qt), generated from the trace's
// records, never written per sample: the phase and the forward pass; garbage
// collection (slots freed and whose they were, moves); the nodes added under
// each parent with their scores; the beams kept; each beam that dropped out
// and why (it finished with EOS, the constraint allowed nothing, or its score
// against the b-th kept score, both numbers given); nodes that finished and
// why (EOS, the length limit); what the constraint allowed per beam; and for
// a verify or draft step the sentences of the step's verify kind
// (VerifyKindSpec::narrate, so a new kind brings its own words).
//
// Only what the records show is said: a reason that needs a field the trace
// lacks (scores, chosen beams, a constraint record; e.g. an external trace)
// is left out, and what cannot be explained is said to be unexplained.
#pragma once
#include <cstdint>
#include <vector>

#include "core/analysis/narration_sentence.h"
#include "core/trace/trace_replay.h"

namespace triescope {

// The tree as the step found it, condensed from the previous step's view:
// what the narration compares with to tell what changed (statuses, the KV
// layout a gc compacted, the beams going in). O(nodes + slots) to make, so a
// viewer keeps the last one instead of replaying a step.
struct TreeBefore {
  int32_t step = -1;                  // the view it was taken from; -1: the empty tree before the prefill
  std::vector<NodeStatus> status;     // [nodes then] each node's status
  std::vector<int32_t> slot_to_node;  // [slots then] node in each slot, -1 if none
  std::vector<int32_t> beams;         // [beams going into the next step] the node of each beam index
};
TreeBefore tree_before(const StepView& previous);

// The step before `step` in `replay` (its step list), -1 for the first.
int32_t narration_previous_step(const TraceReplay& replay, int32_t step);

// The narration of `view` (a view of `replay`). `maybe_before` is the tree
// after the previous step (tree_before of replay.at(narration_previous_step));
// null, or taken at another step: what needs it (status changes, whose slot a
// gc freed) is left out. Never throws for what a record holds: an unreadable
// verify record becomes a sentence naming the field.
std::vector<NarrationSentence> step_narration(const StepView& view, const TraceReplay& replay, const TreeBefore* maybe_before);

}  // namespace triescope
