// A trace of another engine's decode (docs/trace-format.md, algorithm
// "external"): the engine reports each forward pass (the nodes it added,
// the queries, the mask rows and position ids it actually built, its KV
// compactions) and this writer keeps the token tree and slot map, validates
// the structure (parents exist, slots are not reused while held, shapes
// agree) and writes the records through the one TraceRecorder. The mask
// rows and positions are recorded as given, mistakes included: judging them
// is core/analysis/mask_check's job. The Python TraceWriter calls this.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_recorder.h"
#include "core/tree/token_tree.h"

namespace triescope {

inline constexpr const char* kExternalAlgorithm = "external";

struct ExternalNode {
  int32_t parent = kNoNode;  // an existing node id (or one added earlier in the same step), kNoNode for a root
  int32_t token = 0;
  int32_t slot = kNoSlot;    // kNoSlot: no K/V (the node is recorded as finished)
  double logprob = 0.0;
};

struct ExternalStep {
  std::vector<ExternalNode> added;
  std::vector<std::pair<int32_t, std::string>> status;  // (node, status name) changes
  std::vector<std::pair<int32_t, int32_t>> gc_moves;    // (old slot, new slot): a compaction before this step
  bool has_gc = false;
  bool has_forward = false;
  std::vector<int32_t> queries;    // node ids fed in the forward pass
  std::vector<int32_t> positions;  // [queries] the position ids the engine used
  BitMask mask;                    // [queries x cols] the rows the engine built
  // What the engine itself reported for this step (an object or null), written
  // as the step record's `engine` field: its KV cells as read back, its
  // logits' top-k, a differential (triescope.engines). Recorded as given.
  json engine;
};

class ExternalTraceWriter {
 public:
  // `engine` names the engine in the header's config; `config` (an object)
  // is stored beside it. `model` (an object or null) is provenance merged
  // into the header's `model` (the engine's version, the model file...),
  // which `triescope diff` skips. Nothing is visible at `path` until close().
  ExternalTraceWriter(std::string path, std::string engine, std::vector<std::string> vocab, json config,
                      int32_t keyframe_interval = 16, json model = nullptr);
  ~ExternalTraceWriter();
  ExternalTraceWriter(const ExternalTraceWriter&) = delete;
  ExternalTraceWriter& operator=(const ExternalTraceWriter&) = delete;

  // Records the next step (step 0 is the prefill); returns the ids of the
  // added nodes. Throws Error naming the field (added[i].parent, queries[i],
  // mask, positions, gc, status[i]) and records nothing when it is invalid.
  std::vector<int32_t> step(const ExternalStep& s);
  // The summary (outputs: token lists, best first) and the file, atomically.
  void close(const std::vector<std::vector<int32_t>>& outputs);
  // Leaves nothing at the path (what the destructor does unless close() ran).
  void abandon();

  int32_t steps() const { return next_step_; }
  bool closed() const { return state_ != State::open; }
  const TokenTree& tree() const { return tree_; }
  int32_t num_slots() const { return static_cast<int32_t>(slot_to_node_.size()); }
  const std::string& path() const { return path_; }

 private:
  enum class State { open, closed, abandoned };
  void check_open() const;
  std::string path_;
  std::unique_ptr<TraceFileWriter> file_;
  TraceRecorder rec_;
  TokenTree tree_;
  std::vector<int32_t> slot_to_node_;  // [num_slots] node holding each slot, kNoNode when free
  int32_t next_step_ = 0;
  int64_t peak_ = 0;
  State state_ = State::open;
};

}  // namespace triescope
