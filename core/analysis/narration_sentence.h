// The unit of a step's narration (step_narration.h): a sentence is a list of
// segments, each plain text or a reference to a node of the step's tree, so a
// viewer can link the names it prints (the GUI selects the node on a click).
// Verify kinds (verify_kind.h) write their own sentences with these types.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/trace_replay.h"

namespace triescope {

struct NarrationSegment {
  std::string text;   // plain text, or the reference's label ("'far' #6")
  int32_t node = -1;  // >= 0: the text names this node
};

struct NarrationSentence {
  std::string topic;  // what it is about: phase, gc, added, kept, dropped, finished, constraint, verify, kv
  std::vector<NarrationSegment> segments;
};

// Builds one sentence: `s.text("Under ").node(4).text(": ...")`.
class NarrationBuilder {
 public:
  // `view` and `replay` label node references (token text and id).
  NarrationBuilder(const StepView& view, const TraceReplay& replay, std::string topic);
  NarrationBuilder& text(const std::string& t);
  NarrationBuilder& node(int32_t id);
  // "a, b and c" over nodes (at most `max` named, then "and N more").
  NarrationBuilder& nodes(const std::vector<int32_t>& ids, size_t max = 12);
  bool empty() const { return s_.segments.empty(); }
  NarrationSentence take() { return std::move(s_); }

 private:
  const StepView& view_;
  const TraceReplay& replay_;
  NarrationSentence s_;
};

// "'far' #6": a node's token text (the trace's vocabulary, else its id) and
// its node id; "#6" for a node the view does not hold.
std::string narration_node_label(const StepView& view, const TraceReplay& replay, int32_t node);
// The sentence as plain text (references by their labels).
std::string narration_text(const NarrationSentence& s);
// A score as the narration prints it: 3 decimals, "-inf" for -infinity.
std::string narration_score(double x);

}  // namespace triescope
