// One step's events, turned into its step record (docs/trace-format.md). A
// decoder says what happened this step (nodes added, pruned, finished; a
// forward pass; a choice; a draft; a verification result) and hands the
// builder to TraceRecorder::step. When the recorder writes nothing every
// event is a no-op: a field whose value costs something to build is passed as
// a function that runs only when the step is recorded.
#pragma once
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/trace/forward_record.h"
#include "core/trace/kv_record.h"
#include "core/trace/trace.h"
#include "core/tree/token_tree.h"

namespace triescope {

class TraceRecorder;

class StepRecord {
 public:
  // `lists`: the array fields the record carries even when nothing happened
  // ("added", "status", "chosen", ...), written as [].
  explicit StepRecord(const TraceRecorder& rec, std::initializer_list<const char*> lists = {});

  bool on() const { return on_; }

  // Nodes that joined the tree this step ("added": their trace_node()).
  void added(const TokenTree& tree, int32_t node) {
    if (on_) fields_["added"].push_back(trace_node(tree.node(node)));
  }
  void added(const TokenTree& tree, const std::vector<int32_t>& nodes) {
    for (int32_t id : nodes) added(tree, id);
  }
  // A node's status changed ("status").
  void status(int32_t node, NodeStatus s) {
    if (on_) fields_["status"].push_back({{"node", node}, {"status", std::string(node_status_name(s))}});
  }
  void pruned(const std::vector<int32_t>& nodes) {
    for (int32_t id : nodes) status(id, NodeStatus::pruned);
  }
  // The KV figures after the step ("kv"): `figures` returns a KvRecord.
  template <class F>
  void kv(F&& figures) {
    if (on_) fields_[kKvField] = figures().to_json();
  }
  // The target's forward pass ("forward"), the draft model's pass of a
  // prefill ("draft_forward") and one of its passes in a draft step
  // ("draft_forwards"): each returns a pass object (ForwardView::to_json()),
  // built where the pass was.
  template <class F>
  void forward(F&& pass) {
    if (on_) fields_[kForwardField] = pass();
  }
  template <class F>
  void draft_forward(F&& pass) {
    if (on_) fields_[kDraftForwardField] = pass();
  }
  template <class F>
  void draft_forwards_push(F&& pass) {
    if (on_) fields_[kDraftForwardsField].push_back(pass());
  }
  // One entry of the array field `key` ("chosen", ...).
  template <class F>
  void push(const char* key, F&& entry) {
    if (on_) fields_[key].push_back(entry());
  }
  // The field `key` ("constraint", ...).
  template <class F>
  void set(const char* key, F&& value) {
    if (on_) fields_[key] = value();
  }
  // The verification result ("verify"; its "kind" is the header's verify
  // kind), all its fields at once (each kind's typed payload's to_json).
  template <class F>
  void verify(F&& fields) {
    if (!on_) return;
    json v = fields();
    v["kind"] = verify_kind_;
    fields_["verify"] = std::move(v);
  }

  // The fields built so far (null when nothing is recorded).
  json take() { return std::move(fields_); }

 private:
  bool on_;
  std::string verify_kind_;
  json fields_;
};

}  // namespace triescope
